"""Human validation: the labeling page (annotate), people's labels (labels), judges against judges or people
(agreement, judges_vs_people) and the agreement statistics (stats)."""
