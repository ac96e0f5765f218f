"""Data readers (CoNLL, CoNLL-U, relation JSONL, plain text), tagging schemes and the dataset registry."""
