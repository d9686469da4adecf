"""OpenSafeIntent as itself: its release folder, its reference judges and readings, every number of its
reference implementation, and its file layout (export and import).

What other wings use of it is in ``carryon_eval.suites.opensafeintent.public`` (documented there); its suite record
(``.record``, which registers the suite) is what the registry imports. This ``__init__`` imports nothing, so that
finding the wing costs nothing until its record or its API is asked for."""
