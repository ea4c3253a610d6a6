"""Task generators and corpora the models learn from; imports nothing from the rest of the app."""
