"""Every hard limit of the app in one place: what a request may hold before the settings' own,
lower limits apply (app/settings.py)."""

MAX_MAGNITUDE = 1e6  # largest |number| in any input matrix
MAX_TOKEN_CHARS = 40  # longest token label
HARD_MAX_TOKENS = 4096
HARD_MAX_WIDTH = 1024
HARD_MAX_HEADS = 64
MAX_COUNTED_LENGTH = 2**24  # long sequences are counted, never built
MAX_GRID_WIDTH = 8  # the lab edits d_model, d_k and d_v cell by cell: 1 to 8 columns

MAX_LESSON_TITLE_CHARS = 120  # a teacher's lesson title in the URL: longer is cut (and said)
MAX_LESSON_TEXT_CHARS = 1500  # a teacher's lesson text in the URL: longer is cut (and said)
MAX_ECHO_CHARS = 80  # most of a wrong value a page repeats back when it names the mistake

MAX_TEXT_CHARS = 1000  # a sentence for the trained model
MAX_WORD_PIECES = 256  # all-MiniLM-L6-v2's limit on its model card, [CLS] and [SEP] included
MAX_RANKED_PIECES = 64  # the 72-head ranking, 144 ablated runs (≈ 2 s at 64): offered up to this
MAX_LINE_HEADS = 12  # heads the line view draws at once, a colour each

MAX_SEQ_LEN = 1_000_000_000  # the cost calculator's longest sequence
MAX_COUNT = 65_536  # its largest count of heads, layers or sequences

MAX_PROMPT_CHARS = 2000  # a prompt for the decoder (SmolLM2)
MAX_PROMPT_TOKENS = 256  # that prompt, in the decoder's tokens
MAX_GENERATED = 64  # new tokens one request may generate
MAX_CANDIDATES = 20  # next-token candidates listed
MAX_TOP_K = 200  # tokens a sampled step chooses among
MAX_TEMPERATURE = 2.0
MAX_ALL_WEIGHTS_TOKENS = 64  # every layer's n × n weights are sent for at most this many tokens
MIN_REPEAT, MAX_REPEAT = 8, 128  # the induction test: that many random tokens, then again
