"""`--trim_particles`: a predicted span's trailing Korean particles cut with the analyzer, in its passage.

The tool and the export are tested with the runs of test_korquad.py and test_klue_mrc.py; here the trimming itself,
with Kiwi and MeCab-ko, on real Korean sentences.
"""

import random

import pytest

from albert_tf.errors import OptionError
from albert_tf.tasks.squad.answer_spans import QuestionAnsweringOptions
from albert_tf.tasks.squad.particles import ParticleTrimmer, analyzer_name, trailing_cut
from albert_tf.text.korean_analyzers import ANALYZERS, Morpheme
from tests.conftest import SHARED, corpus_lines, requires_shared


@pytest.fixture(scope="module", params=ANALYZERS)
def trimmer(request):
  return ParticleTrimmer(request.param)


@pytest.mark.parametrize("sentence, span, expected", [
    ("회의는 서울에서 열렸다.", "서울에서", "서울"),
    ("한국의 수도는 서울이다.", "한국의", "한국"),
    ("그 마을을 지켰다.", "마을을", "마을"),
    ("경기도에 산다.", "경기도에", "경기도"),
    ("수도는 서울이다.", "서울이다", "서울"),  # a copula with its ending
    ("외교부 장관인 그는 말했다.", "외교부 장관인", "외교부 장관"),  # 인 = 이+ㄴ, one syllable cut whole
    # Words that end like a particle but are not: kept whole, as analysed in their passage.
    ("그의 나이가 많다.", "나이", "나이"),
    ("고양이가 운다.", "고양이", "고양이"),
    ("회의 결과를 발표했다.", "회의", "회의"),
    ("그는 경기도에 산다.", "경기도", "경기도"),
    ("그는 서울에 갔다.", "갔다", "갔다"),  # a verb's ending is its answer's
    ("  서울에서 ", "  서울에서 ", "  서울"),  # whitespace around the span, as a window's span may have
])
def test_trailing_particles_are_cut_in_context(trimmer, sentence, span, expected):
  start = sentence.index(span)
  assert trimmer.trim(sentence, start, start + len(span)) == expected


@pytest.mark.parametrize("tags, cut, cut_without_copula", [
    ("NNP JKB", 1, 1), ("NNG JKB JX", 2, 2), ("NNG VCP EF", 2, 0), ("NNG VCP+ETM", 1, 0), ("NNG VCP EC JKQ", 3, 1),
    ("VV EP EF", 0, 0), ("NNG XSV EF JKQ", 1, 1), ("JKS", 0, 0), ("VCP EF", 0, 0), ("NNG", 0, 0),
    ("NNG JKG NNG", 0, 0)])
def test_the_cut_is_the_trailing_particles_and_copula_never_the_whole_span(tags, cut, cut_without_copula):
  morphemes = [Morpheme(index, index + 1, tag) for index, tag in enumerate(tags.split())]
  assert trailing_cut(morphemes) == cut
  assert trailing_cut(morphemes, copula=False) == cut_without_copula


@requires_shared(f"{SHARED}/corpus/ko_law.txt")
def test_a_trimmed_answer_is_always_a_nonempty_prefix_of_the_span_in_the_passage(trimmer):
  rng = random.Random(0)
  passages = corpus_lines("ko_law.txt", 200) + corpus_lines("ko_libreoffice_help.txt", 200)
  cut = 0
  for passage in passages:
    for _ in range(2):
      start = rng.choice([index for index, character in enumerate(passage) if not character.isspace()])
      # Half the spans end at a word's end, where particles are; half anywhere.
      word_ends = [index for index in range(start + 1, len(passage) + 1)
                   if index == len(passage) or passage[index].isspace()]
      end = rng.choice(word_ends[:4]) if rng.random() < 0.5 else rng.randint(start + 1, len(passage))
      new_end = trimmer.answer_end(passage, start, end)
      assert start < new_end <= end and passage[start:new_end].strip(), (passage, start, end, new_end)
      assert new_end == end or not passage[new_end - 1].isspace()
      cut += new_end < end
  assert cut > 50  # the spans at words' ends do end in particles


def test_the_analyzer_is_the_vocabularys_else_kiwi_and_checked():
  assert [analyzer_name(name) for name in ("mecab", "kiwi", None)] == ["mecab", "kiwi", "kiwi"]
  with pytest.raises(OptionError, match="trim_particles='okt'"):
    QuestionAnsweringOptions(trim_particles="okt").check(128)
