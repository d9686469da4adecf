"""The LLM stages' fixed numbers and names that both the stage records (stages.py) and the model settings
(llm_config.py) read: checklist size, the harm filter's threshold, generator seeds, classifier styles, roles."""
from __future__ import annotations

MIN_ITEMS = 7            # defaults of --min-items / --max-items: the paper's final checklists have 7..23 items
MAX_ITEMS = 23           # (Appendix B.3: a description of its result, here options with those defaults)
MIN_HARMLESS = 3         # harmless answers a query needs (or every generator's, if there are fewer)
GENERATOR_SEED = 1000    # generator i samples with seed GENERATOR_SEED + i
HARM_STYLES = ("judge", "wildguard")   # the harm filter's two classifier styles (stages.HARM_STAGES)
# Every role a stage may take besides "generator" (each needs a model in LLMConfig.roles).
MODEL_ROLES = ("intent_writer", "harm_classifier", "decomposer", "merger", "item_filter")
