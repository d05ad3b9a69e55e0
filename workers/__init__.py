"""Worker-pool code that may need an accelerator: model loading, BERTScore, the BLEURT-style scorer."""
