"""python -m corpus_heads: the corpus view's statistics computed headless, in one process or on a Ray cluster."""
