"""A saved model from the epoch-1 best checkpoint of the BC5CDR recipe run (dev F1 79.08)."""
import torch, pathlib
from bertkit.encoders import default_model, load_tokenizer
from bertkit.tasks.ner.model import build_tagger
tok = load_tokenizer(default_model())
t = build_tagger(default_model(), ['B-Chemical', 'B-Disease', 'I-Chemical', 'I-Disease', 'O'], crf=True, label_all_subwords=False)
sd = torch.load('/work/models/bc5cdr-ner/checkpoints/best.pt', map_location='cpu')
print(t.load_state_dict(sd, strict=False))
t.save(pathlib.Path("/work/models/bc5cdr-ner-epoch1"), tok, {"max_length": 512, "base_model": default_model(), "data": "bc5cdr", "note": "epoch-1 best.pt of bertkit finetune ner --recipe bc5cdr-ner-minilm (dev F1 79.08)"})
