"""Human-judgment datasets: canonical schema, parsers (formats) and the versioned store."""
