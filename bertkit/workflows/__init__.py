"""Multi-stage workflows composed from bertkit's commands (vocabulary, pretraining, fine-tuning)."""
