"""What a word is for whole-word and n-gram masking: `--word_boundaries=google|sentencepiece|morpheme`.

Whole-word masking masks every piece of a word together, and n-gram masking counts n in words, so the rule that
says which pieces start a word decides what the model learns to predict. Three rules:

- `google` (the default; Google's `_is_start_piece_sp`): a piece starts a word when it begins with "▁", is one
  punctuation character, or holds any character other than lower-case Latin letters and punctuation. So every
  Hangul, CJK or digit piece starts a word of its own: in Korean text a "word" is one piece, and a 3-gram is
  three pieces, most often inside one eojeol (google-research/albert #161 reports it for other scripts).
- `sentencepiece`: only a piece that begins with "▁" (a space before it in the text) starts a word, whatever the
  script (`[CLS]` and `[SEP]` are never part of a word). A word is then an eojeol: the text between two spaces,
  with the punctuation, an `<unk>` or a user-defined symbol inside it. On lower-cased English it differs from
  `google` only where `google` starts a word without a space: one-character punctuation pieces (9.6% of the
  tokens of the shared `en_wiki.txt`), pieces with digits (1.1%) or accented letters (`docs/benchmarks.md`).
- `morpheme`: `sentencepiece`'s starts, and also every piece that begins where a morpheme begins inside an eojeol
  (학교|에서, 공부|했|다), found by analysing the text with the Korean analyzer that the vocabulary was learned
  with (`train_sentencepiece --pretokenizer`), whose pieces therefore do not cross those boundaries. Such a
  vocabulary's pieces are mostly whole morphemes or parts of one, so on Hangul this rule differs from `google`
  only where a morpheme takes several pieces.

The first two rules are properties of a piece (`piece_starts`). A morpheme start is a property of the text, so
the tokenize step marks it in the token list: such a piece is carried as `~id` (a negative number) through token
stores, segment pairing, truncation and both engines, which move it as they move ids, until `split_marks` turns
the finished instance's tokens back into ids and word starts.

Records written with a rule other than `google` carry its name's index in `RULES` as the int64 feature
`word_boundaries`, so that training can say what its data's words are and refuse files of different rules;
records without the feature (Google's, and every file written before the flag) are `google`'s, and `google`
records are byte for byte what they were. `token_boundary` holds the rule's word starts, which is what dynamic
masking reads.
"""

from typing import List, Optional, Sequence, Tuple

from albert_tf.errors import OptionError

RULES = ("google", "sentencepiece", "morpheme")
GOOGLE = "google"
MORPHEME = "morpheme"
FEATURE = "word_boundaries"
# What a word is under each rule, as the tools say it.
DESCRIPTIONS = {
    "google": "Google's piece rule: every piece with a character other than lower-case Latin letters starts a word",
    "sentencepiece": "eojeols: a word is the text between two spaces",
    "morpheme": "eojeols split where a morpheme starts",
}

_WORD_START = "\u2581"
_START_PIECE_PUNCTUATION = set('!"#$%&()*+,-./:;?@[\\]^_`{|}~')
_LATIN_LOWER = set("abcdefghijklmnopqrstuvwxyz")


def is_start_piece(piece: str) -> bool:
  """Google's word-start rule: a piece starts a word unless it is lower-case Latin letters or punctuation without
  the "▁" prefix (so CJK, Hangul, digits and accented letters always start a new word)."""
  return (piece.startswith(_WORD_START) or piece.startswith("<") or piece in _START_PIECE_PUNCTUATION or
          not all(char.lower() in _LATIN_LOWER or char in _START_PIECE_PUNCTUATION for char in piece))


def piece_starts(sp_model, rule: str) -> List[bool]:
  """Whether each piece of the SentencePiece processor `sp_model` starts a word under `rule` (under `morpheme`,
  the eojeol starts; the morpheme starts inside eojeols come from the text)."""
  check_rule(rule)
  pieces = [sp_model.IdToPiece(i) for i in range(sp_model.GetPieceSize())]
  if rule == GOOGLE:
    return [is_start_piece(piece) for piece in pieces]
  return [piece.startswith(_WORD_START) for piece in pieces]


def check_rule(rule: str, pretokenizer: Optional[str] = None, spm_model_file: str = ""):
  """Raises OptionError for an unknown rule, or `morpheme` with a vocabulary learned without an analyzer."""
  if rule not in RULES:
    raise OptionError(f"--word_boundaries must be one of {', '.join(RULES)}, got {rule!r}.")
  if rule == MORPHEME and spm_model_file and pretokenizer is None:
    raise OptionError(
        f"--word_boundaries=morpheme needs a vocabulary learned within morpheme boundaries (train_sentencepiece "
        f"--pretokenizer=kiwi or mecab), and nothing records one for {spm_model_file} (its .tokenizer_options.json "
        "names the analyzer): its pieces may cross the boundaries. Use --word_boundaries=sentencepiece.")


def mark_morpheme_starts(ids: Sequence[int], offsets: Sequence[int], morpheme_starts: Sequence[int],
                         starts: Sequence[bool]) -> List[int]:
  """`ids` with `~id` for each piece that begins (at its offset in the text) where a morpheme does, unless the
  piece starts a word anyway (`starts`, by id)."""
  at = set(morpheme_starts)
  return [~token if offset in at and not starts[token] else token for token, offset in zip(ids, offsets)]


def split_marks(tokens: Sequence[int]) -> Tuple[List[int], List[bool]]:
  """The ids of `tokens` and whether each is marked as a morpheme start."""
  return [token if token >= 0 else ~token for token in tokens], [token < 0 for token in tokens]


def feature_value(rule: str) -> Optional[int]:
  """The `word_boundaries` feature's value for `rule`; None for `google`, whose records have no such feature."""
  return None if rule == GOOGLE else RULES.index(rule)


def rule_of_feature(values: Sequence[int]) -> str:
  """The rule of a record's `word_boundaries` values.

  Raises:
    ValueError: not one index of `RULES`.
  """
  if len(values) != 1 or not 0 <= values[0] < len(RULES):
    raise ValueError(f"expected one of 0-{len(RULES) - 1}, got {list(values)}")
  return RULES[values[0]]
