"""Data readers (CoNLL, plain text), tagging schemes and the dataset registry."""
