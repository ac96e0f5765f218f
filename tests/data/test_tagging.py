from bertkit.data.tagging import Tag, allowed_transitions, detect_scheme, iob2_label_set, to_iob2


def tags(*names):
    return [Tag("O", "") if n == "O" else Tag(*n.split("-", 1)) for n in names]


def test_detect():
    assert detect_scheme([tags("B-X", "I-X", "O")]) == "IOB2"
    assert detect_scheme([tags("O", "I-X")]) == "IOB1"
    assert detect_scheme([tags("B-X", "I-Y")]) == "IOB1"
    assert detect_scheme([tags("S-X")]) == "IOBES"


def test_iob1_adjacent_entities_split_by_b():
    assert to_iob2(tags("I-X", "I-X", "B-X", "I-X", "I-Y"), "IOB1") == \
        ["B-X", "I-X", "B-X", "I-X", "B-Y"]


def test_iobes_e_then_i_starts_new():
    assert to_iob2(tags("B-X", "E-X", "I-X", "S-X", "S-X"), "IOBES") == \
        ["B-X", "I-X", "B-X", "B-X", "B-X"]


def test_label_set_sorted_and_complete():
    assert iob2_label_set(["Disease", "Chemical"]) == \
        ["B-Chemical", "B-Disease", "I-Chemical", "I-Disease", "O"]


def test_allowed_transitions():
    labels = ["B-X", "B-Y", "I-X", "I-Y", "O"]
    start, trans = allowed_transitions(labels)
    assert start == [True, True, False, False, True]
    assert trans[labels.index("B-X")][labels.index("I-X")]
    assert not trans[labels.index("B-X")][labels.index("I-Y")]
    assert not trans[labels.index("O")][labels.index("I-X")]
    assert trans[labels.index("I-Y")][labels.index("I-Y")]
