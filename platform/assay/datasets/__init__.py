"""Human-judgment datasets: canonical schema, parsers (formats) and the versioned store.

``__all__`` names its public modules; the package imports none of them itself.
"""

__all__ = [
    "formats", "human", "names", "parsed", "profile", "rater_agreement", "rater_scores", "schema", "store", "versions",
]
