"""Tiny sentence-pair similarity data for the sim task tests."""

import json

PAIRS = [("The protein binds the receptor .", "The receptor is bound by the protein .", 3.8),
         ("Mice were fed a high-fat diet .", "Tumours grew in every mouse .", 0.4),
         ("KRAS mutant cells need GATA2 .", "GATA2 knockdown kills KRAS mutant cells .", 3.0),
         ("The drug was well tolerated .", "Gene expression was measured by PCR .", 0.0),
         ("Cells were stained with DAPI .", "DAPI staining marked the nuclei .", 2.6),
         ("The model predicts survival .", "Survival is predicted by the model .", 4.0)]


def write_sim_dir(root, pairs=PAIRS):
    root.mkdir(parents=True, exist_ok=True)
    body = "".join(json.dumps({"text": a, "text_pair": b, "score": s, "id": str(i)}) + "\n"
                   for i, (a, b, s) in enumerate(pairs))
    for split in ("train", "dev", "test"):
        (root / f"{split}.jsonl").write_text(body)
    return root
