import torch
from transformers import BertConfig

from bertkit.heads.relation import BertForRelationClassification, entity_start_positions, pool


def test_entity_start_positions_first_marker_of_any_type():
    ids = torch.tensor([[101, 7, 900, 8, 901, 9, 902, 5, 903, 102],
                        [101, 902, 5, 903, 7, 950, 8, 901, 102, 0],
                        [101, 7, 8, 102, 0, 0, 0, 0, 0, 0]])
    # subject openers 900 (untyped) and 950 (typed); object opener 902
    pos = entity_start_positions(ids, torch.tensor([900, 950]), torch.tensor([902]))
    assert pos.tolist() == [[2, 6], [5, 1], [0, 0]]  # no marker: the [CLS] position


def test_pool_gathers_states_at_positions():
    hidden = torch.arange(2 * 5 * 3, dtype=torch.float).reshape(2, 5, 3)
    out = pool(hidden, "entity-start", torch.tensor([[1, 3], [4, 0]]))
    assert out.shape == (2, 6)
    assert torch.equal(out[0], torch.cat([hidden[0, 1], hidden[0, 3]]))
    assert torch.equal(out[1], torch.cat([hidden[1, 4], hidden[1, 0]]))
    assert torch.equal(pool(hidden, "cls"), hidden[:, 0])


def test_model_finds_markers_itself_and_loss():
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=32, num_labels=3, relation_pooling="entity-start",
                     subject_start_ids=[40], object_start_ids=[42])
    model = BertForRelationClassification(cfg).eval()
    assert model.classifier.in_features == 32
    ids = torch.tensor([[1, 5, 40, 6, 41, 7, 42, 8, 43, 2]])
    explicit = model(input_ids=ids, entity_pos=torch.tensor([[2, 6]])).logits
    assert torch.allclose(model(input_ids=ids).logits, explicit)
    assert not torch.allclose(model(input_ids=ids, entity_pos=torch.tensor([[3, 6]])).logits, explicit)
    out = model(input_ids=ids, labels=torch.tensor([1]))
    assert out["loss"] > 0 and out["logits"].shape == (1, 3)
    cls = BertForRelationClassification(BertConfig(**{**cfg.to_dict(), "relation_pooling": "cls"}))
    assert cls.classifier.in_features == 16
