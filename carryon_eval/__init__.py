"""CarryOnBench evaluator: rollout -> judge -> metrics -> report against any OpenAI-compatible endpoint."""

__version__ = "0.1.0"
