def test_word_count_matches_bytes_split_on_random_text():
    import numpy as np

    from bertkit.vocab.corpus import count_words_bytes

    rng = np.random.default_rng(0)
    alphabet = np.frombuffer(b"ab \t\n\r\x0b\x0c\xc3\xa9-", dtype=np.uint8)
    for n in (0, 1, 2, 7, 100, 5000):
        block = alphabet[rng.integers(0, len(alphabet), n)].tobytes()
        assert count_words_bytes(block) == len(block.split())
