"""Every hard limit of the app in one place: what a request may hold before the settings' own,
lower limits apply (app/settings.py)."""

MAX_MAGNITUDE = 1e6


HARD_MAX_TOKENS = 4096


HARD_MAX_WIDTH = 1024


MAX_COUNTED_LENGTH = 2**24  # long sequences are counted, never built


HARD_MAX_HEADS = 64


MAX_TEXT_CHARS = 1000


MAX_WORD_PIECES = 128  # what all-MiniLM-L6-v2 was trained to read, [CLS] and [SEP] included


MAX_SEQ_LEN = 1_000_000_000


MAX_COUNT = 65_536
