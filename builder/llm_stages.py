"""The LLM stages' public names, for code that imports them from one place.

The stages are records in builder/stages.py; the runner is builder/llm_run.py; the configuration
builder/llm_config.py; provenance, manifest and card summary builder/provenance.py; the dry run
builder/dry_run.py.
"""
from .dry_run import dry_run_plan, format_dry_run
from .llm_config import LLMConfig, ModelSpec
from .llm_run import LLMStageAbort, LLMStages
from .stages import ROLES, STAGE_NAMES, STAGES, Stage, pipeline

__all__ = ["LLMConfig", "LLMStageAbort", "LLMStages", "ModelSpec", "ROLES", "STAGES", "STAGE_NAMES", "Stage",
           "dry_run_plan", "format_dry_run", "pipeline"]
