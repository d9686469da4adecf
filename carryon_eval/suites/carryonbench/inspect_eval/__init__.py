"""CarryOnBench in inspect-ai (the extra ``[inspect]``; the suite record's ``InspectPart``): its task
(``task``: ``inspect eval carryon_eval/carryonbench``) and its part of a run folder exported as an inspect log
(``scores``: each transcript's scores and results.json's headline numbers as the log's metrics). Light: importing
the package imports no inspect-ai."""
