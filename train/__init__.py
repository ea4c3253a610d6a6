"""The deterministic training scripts of the built-in models (python -m train.<name>), apart from the runtime."""
