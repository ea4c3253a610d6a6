"""`python -m prune`: prune your own fine-tuned model on your own labelled rows, headless (see prune/__main__.py)."""
