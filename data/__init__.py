"""Task data and corpora: generators and readers that import no model code (the bottom layer)."""
