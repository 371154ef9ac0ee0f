"""Every training step compiles with XLA, as a TPU needs, and computes what the uncompiled step computes; every
training dataset the drivers build has the static shapes that XLA on a TPU needs.

For each objective (MLM+SOP, MLM only, classification, regression, KLUE-RE, SQuAD v1 and v2, RACE, token
classification, dependency parsing, dialogue state tracking, sentence encoder, distillation): its task's examples
go through the objective's `encode` into the driver's training dataset (`pretraining_dataset` for pretraining,
`finetuning_dataset.training_dataset` for the rest), whose element spec must be fully defined; its first batch
then goes through one step of `loop.replica_train_step`, the step `loop.Trainer` runs, with the objective's model
and the driver's optimizer (LAMB for pretraining, AdamW for fine-tuning), under a one-device strategy: once
uncompiled, once with `jit_compile=True`, from the same weights and optimizer state, in float32 and, for one case of
each objective class (`BFLOAT16_CASES`), under `--mixed_precision=bfloat16` (a model built under the bfloat16
policy, from the same float32 weights).

- float32: the losses within 1e-5 (the issue's), every weight within 1% of the learning rate (a step moves a weight
  by up to ~3 learning rates: AdamW's first step is about lr·g/|g|).
- bfloat16: XLA rounds otherwise (it may keep a fused intermediate in float32, as TPUs do, and it sums in another
  order), and one logit rounded to the other side of a bfloat16 step moves a loss by ~1e-4: 1e-5 is below
  bfloat16's resolution. The losses agree within one bfloat16 rounding unit (2^-8) of max(1, loss) (measured: 4% of
  that at most); the weights within a tenth of the step's update, or within three times what bfloat16 itself moves
  them from the float32 step (AdamW divides each gradient by its own size, so where the gradients are rounding
  noise, as RACE's nearly equal options give at initialisation, so is the update).

The uncompiled step runs eagerly: each op's own kernel, the step's meaning, and a sixth of the cost of a
`tf.function` (whose graph grappler rewrites: its fused bfloat16 kernels round otherwise again).

The objectives are `test_objectives.objective_classes`, every `...Objective` class of the package: a class without a
case here fails `test_every_objective_has_a_case`.
"""

import dataclasses
import functools

import numpy as np
import pytest
import tensorflow as tf

import albert_tf
from albert_tf.data import finetuning_dataset
from albert_tf.data import pretraining_dataset
from albert_tf.data.instances import MASKING_RECIPE_FEATURE, MaskingRecipe
from albert_tf.data.task_readers import Example
from albert_tf.tasks.classification.catalogue import get_task
from albert_tf.tasks.classification.objective import ClassifierObjective
from albert_tf.tasks.classification.relation_extraction import Entity, RelationTask, mark_entities
from albert_tf.tasks.dependency_parsing.data import ParseExample
from albert_tf.tasks.dependency_parsing.objective import DependencyParsingObjective
from albert_tf.tasks.dialogue_state_tracking.data import TurnExample
from albert_tf.tasks.dialogue_state_tracking.objective import DialogueStateTrackingObjective
from albert_tf.tasks.race.data import RaceExample
from albert_tf.tasks.race.objective import MultipleChoiceObjective
from albert_tf.tasks.similarity.distillation import DistillationObjective
from albert_tf.tasks.similarity.objective import SentenceSimilarityObjective
from albert_tf.tasks.similarity.parallel_text import ParallelPair
from albert_tf.tasks.squad.answer_spans import QuestionAnsweringOptions
from albert_tf.tasks.squad.examples import SquadExample
from albert_tf.tasks.squad.features import SquadSplit, convert_examples_to_features
from albert_tf.tasks.squad.objective import SquadObjective, SquadSettings
from albert_tf.tasks.token_classification.data import TokenExample
from albert_tf.tasks.token_classification.objective import TokenClassificationObjective
from albert_tf.text.graph_tokenizer import tokenizer_for_model
from albert_tf.text.tokenizer import SentencePieceTokenizer
from albert_tf.training import loop
from albert_tf.training.pretraining_objective import PretrainingObjective
from tests.conftest import SP8K_MODEL, requires_shared
from tests.training.test_objectives import objective_classes

STRATEGY = tf.distribute.OneDeviceStrategy("/cpu:0")
SEQ = 32
BATCH = 2
MAX_PREDICTIONS = 5
SEED = 7
LEARNING_RATE = 1e-3
# vocab_size: the shared vocabulary's, which the fine-tuning tasks' tokenizers give ids of. No dropout (the
# config's default, and 0.0 for the heads below): XLA draws other random bits than the CPU kernels, as two
# uncompiled runs draw other masks too.
CONFIG = albert_tf.AlbertConfig(vocab_size=8000, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=32, embedding_size=8, max_position_embeddings=SEQ)
FLOAT32_LOSS_TOLERANCE = 1e-5  # the issue's
FLOAT32_WEIGHT_TOLERANCE = 1e-2 * LEARNING_RATE
BFLOAT16_ROUNDING_UNIT = 2.0 ** -8


# --- each task's training input, as its driver builds it --------------------------------------------------------

def int_feature(values):
  return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(value) for value in values]))


def pretraining_records(path, masked: bool, recipe: MaskingRecipe) -> str:
  """Four records of Google's layout, `[CLS] a [SEP] b [SEP]` padded to SEQ (the later ones shorter): masked, as
  `create_pretraining_data` writes them (the last prediction slot padding), or unmasked (`--dynamic_masking`: the
  recipe and the word starts instead)."""
  rng = np.random.default_rng(0)
  with tf.io.TFRecordWriter(str(path)) as writer:
    for index in range(4):
      length = SEQ - 3 * index
      middle = length // 2  # a's [SEP]
      real = np.arange(SEQ) < length
      ids = np.where(real, rng.integers(5, CONFIG.vocab_size, SEQ), 0)
      ids[[0, middle, length - 1]] = [recipe.cls_id, recipe.sep_id, recipe.sep_id]
      features = {"input_mask": int_feature(real), "segment_ids": int_feature(real & (np.arange(SEQ) > middle)),
                  "next_sentence_labels": int_feature([index % 2])}
      if masked:
        positions = np.sort(rng.choice(np.arange(1, middle), MAX_PREDICTIONS - 1, replace=False))
        features.update(masked_lm_positions=int_feature([*positions, 0]),
                        masked_lm_ids=int_feature([*ids[positions], 0]),
                        masked_lm_weights=tf.train.Feature(float_list=tf.train.FloatList(
                            value=[1.0] * (MAX_PREDICTIONS - 1) + [0.0])))
        ids[positions] = recipe.mask_id
      else:
        features.update(token_boundary=int_feature(real), **{MASKING_RECIPE_FEATURE: int_feature(recipe.to_values())})
      features["input_ids"] = int_feature(ids)
      writer.write(tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString())
  return str(path)


def pretraining_input(directory, sentence_order_prediction: bool):
  """MLM+SOP reads masked records, MLM only unmasked ones masked in the input pipeline: both parsers. The dataset
  of `Pretraining._train_dataset`'s `dataset_fn`."""
  recipe = MaskingRecipe(cls_id=2, sep_id=3, mask_id=4, vocab_size=CONFIG.vocab_size, masked_lm_prob=0.15,
                         ngram=3, favor_shorter_ngram=True, do_whole_word_mask=True)
  masked = sentence_order_prediction
  path = pretraining_records(directory / "records.tfrecord", masked, recipe)
  dataset = pretraining_dataset.pretraining_dataset(
      [path], SEQ, MAX_PREDICTIONS, BATCH, is_training=True, input_context=tf.distribute.InputContext(), seed=SEED,
      start_example=0, masking_recipe=None if masked else recipe)
  return PretrainingObjective(sentence_order_prediction), dataset


@functools.lru_cache(maxsize=None)
def python_tokenizer():
  return SentencePieceTokenizer(SP8K_MODEL)


def graph_tokenizer():
  """A new one for each split: its SentencePiece resource belongs to a kernel that `tf.random.set_seed` (which
  `loop.run_settings` calls) drops. The drivers encode every split before they set their seeds."""
  return tokenizer_for_model(CONFIG, SP8K_MODEL)


PAIRS = [("The cat sat on the mat.", "A cat was sitting on a mat."), ("서울은 한국의 수도이다.", "한국의 수도는 서울이다."),
         ("He plays the violin every day.", "The weather is cold today."), ("나는 아침에 커피를 마신다.", "오늘은 비가 온다.")]


def pair_examples(labels):
  return [Example(f"train-{index}", a, b, label) for index, ((a, b), label) in enumerate(zip(PAIRS, labels))]


def relation_examples():
  """KLUE-RE's sentences, their entities marked as the task's reader marks them."""
  records = [("이순신은 조선의 장군이다.", Entity("이순신", 0, 2, "PER"), Entity("조선", 5, 6, "ORG"), "per:employee_of"),
             ("삼성전자는 수원에 본사가 있다.", Entity("삼성전자", 0, 3, "ORG"), Entity("수원", 6, 7, "LOC"),
              "org:place_of_headquarters"),
             ("김철수와 이영희는 친구이다.", Entity("김철수", 0, 2, "PER"), Entity("이영희", 5, 7, "PER"), "no_relation")]
  return [Example(f"klue-re-{index}", mark_entities(sentence, subject, obj), None, label)
          for index, (sentence, subject, obj, label) in enumerate(records)]


def squad_examples(version: int, reading: QuestionAnsweringOptions) -> SquadSplit:
  """SQuAD's training windows (a third question unanswerable in v2), as `feature_cache` makes them."""
  contexts = ["The Eiffel Tower was completed in 1889 and stands in Paris.", "세종대왕은 1443년에 훈민정음을 만들었다.",
              "Water boils at one hundred degrees at sea level."]
  questions = [("When was the Eiffel Tower completed?", "1889"), ("훈민정음은 누가 만들었나?", "세종대왕"),
               ("What color is the sky?", None if version == 2 else "Water")]
  examples = [SquadExample(f"q{index}", question, context, answer or "", context.index(answer) if answer else -1,
                           answer is None, (answer,) if answer else ())
              for index, (context, (question, answer)) in enumerate(zip(contexts, questions))]
  features = convert_examples_to_features(examples, python_tokenizer(), SEQ, reading.doc_stride,
                                          reading.max_query_length, is_training=True)
  return SquadSplit(examples, features, 0, [])


def race_examples():
  article = "민수는 주말에 도서관에 가서 역사 책을 읽었다. 그리고 저녁에는 친구와 공원을 산책했다."
  return [RaceExample("a-0", "middle", article, "민수는 주말에 어디에 갔나?", ("도서관", "바다", "학교", "시장"), 0),
          RaceExample("a-1", "middle", article, "저녁에 민수는 _ 산책했다.", ("혼자", "친구와", "개와", "가족과"), 1),
          RaceExample("b-0", "high", "The river flooded the town in spring.", "When did the river flood?",
                      ("in winter", "in summer", "in spring", "never"), 2)]


def tagged_sentences():
  """KLUE-NER's sentences: a tag per character."""
  sentences = [("이순신은 서울에서 태어났다.", {"이순신": "PS", "서울": "LC"}),
               ("삼성전자는 2020년에 설립되지 않았다.", {"삼성전자": "OG", "2020년": "DT"}),
               ("오늘 오후 3시에 만나자.", {"오후 3시": "TI"})]
  examples = []
  for index, (text, entities) in enumerate(sentences):
    tags = ["O"] * len(text)
    for entity, kind in entities.items():
      start = text.index(entity)
      tags[start:start + len(entity)] = [f"B-{kind}"] + [f"I-{kind}"] * (len(entity) - 1)
    examples.append(TokenExample(f"klue-ner-{index}", tuple(text), tuple(tags), "klue-ner"))
  return examples


def parsed_sentences():
  """KLUE-DP's sentences: words, lemmas, "+"-joined tags, heads and relations."""
  return [ParseExample("dp-0", ("나는", "학교에", "갔다"), ("나 는", "학교 에", "가 았 다"), ("NP+JX", "NNG+JKB", "VV+EP+EF"),
                       (3, 3, 0), ("NP_SBJ", "NP_AJT", "VP"), "나는 학교에 갔다"),
          ParseExample("dp-1", ("그", "책은", "재미있다"), ("그", "책 은", "재미있 다"), ("MM", "NNG+JX", "VA+EF"),
                       (2, 3, 0), ("DP", "NP_SBJ", "VP"), "그 책은 재미있다"),
          ParseExample("dp-2", ("비가", "온다"), ("비 가", "오 ㄴ다"), ("NNG+JKS", "VV+EF"), (2, 0), ("NP_SBJ", "VP"),
                       "비가 온다")]


ONTOLOGY = {"관광-종류": ["none", "dontcare", "공원", "박물관"], "숙소-주차 가능": ["none", "dontcare", "yes", "no"],
            "식당-지역": ["none", "dontcare", "서울 중앙", "서울 북쪽"]}


def dialogue_turns():
  """WoS's user turns: each with the dialogue so far and the state after it."""
  turns = ["서울 중앙에 있는 식당을 찾아요.", "네, 어떤 음식을 원하세요?", "한식이요. 그리고 근처 공원도 알려주세요.",
           "근처에 공원이 있습니다.", "주차 가능한 숙소도 있나요?"]
  states = [("식당-지역-서울 중앙",), ("식당-지역-서울 중앙", "관광-종류-공원"),
            ("식당-지역-서울 중앙", "관광-종류-공원", "숙소-주차 가능-yes")]
  return [TurnExample(f"wos-0-{index}", "wos-0", tuple(turns[:2 * index + 1]), state)
          for index, state in enumerate(states)]


def distillation_objective():
  """Parallel pairs and a teacher's unit-length embeddings of their sources, as wide as the student's."""
  pairs = [ParallelPair(line, source, translation) for line, (source, translation) in enumerate(
      [("The cat sat on the mat.", "고양이가 매트 위에 앉았다."), ("It rains today.", "오늘은 비가 온다."),
       ("I drink coffee in the morning.", "나는 아침에 커피를 마신다.")], 1)]
  teacher = np.random.default_rng(1).normal(size=(len(pairs), CONFIG.hidden_size)).astype(np.float32)
  return DistillationObjective(pairs, teacher / np.linalg.norm(teacher, axis=1, keepdims=True), dev_size=0, seed=1)


def finetuning_objective_and_examples(name):
  """The objective of case `name` and its train split's examples, as its tool's reader gives them."""
  if name == "classification":
    return ClassifierObjective(get_task("mrpc")), pair_examples(["1", "0", "0", "1"])
  if name == "regression":
    return ClassifierObjective(get_task("sts-b")), pair_examples([4.6, 1.0, 0.2, 2.5])
  if name == "klue-re":
    objective = ClassifierObjective(RelationTask())
    # The relations a run reads from relation_list.json, as a resumed run reads them from its task.json.
    objective.adopt_run_info({"task": "klue-re", "entity_markers": "typed_punct", "label_list": [
        "no_relation", "org:place_of_headquarters", "per:employee_of"]}, "<no run directory>")
    return objective, relation_examples()
  if name in ("squad-v1", "squad-v2"):
    version = int(name[-1])
    reading = QuestionAnsweringOptions(max_query_length=8, doc_stride=8)
    return (SquadObjective(SquadSettings(version=version, reading=reading), python_tokenizer(), SEQ),
            squad_examples(version, reading))
  if name == "race":
    return MultipleChoiceObjective(python_tokenizer(), max_qa_length=8), race_examples()
  if name == "token-classification":
    return TokenClassificationObjective("klue-ner", python_tokenizer(), doc_stride=8), tagged_sentences()
  if name == "dependency-parsing":
    return DependencyParsingObjective(python_tokenizer(), "klue-dp", max_words=4, pos_embedding_size=4), (
        parsed_sentences())
  if name == "dialogue-state-tracking":
    objective = DialogueStateTrackingObjective(python_tokenizer())
    objective.adopt_run_info({"task": "wos", "ontology": ONTOLOGY}, "<no run directory>")  # as its reader's
    return objective, dialogue_turns()
  if name == "sentence-encoder":
    return SentenceSimilarityObjective(get_task("sts-b")), pair_examples([4.6, 1.0, 0.2, 2.5])
  if name == "distillation":
    objective = distillation_objective()
    return objective, objective.read_examples(None, "train")
  raise ValueError(f"No case {name!r}.")


def finetuning_input(name):
  """The objective and the dataset of `FineTuning._train`'s `dataset_fn`, of the train split as
  `FineTuning._read_splits` encodes it."""
  objective, examples = finetuning_objective_and_examples(name)
  objective.learn_from_train(examples)
  split = objective.encode(examples, graph_tokenizer(), SEQ, "train examples")
  return objective, finetuning_dataset.training_dataset(split, BATCH, SEED, 0, tf.distribute.InputContext())


# Each case and the objective class it trains: pretraining's two, the classifier's three jobs and the two SQuADs
# share a class.
CASES = {
    "mlm-sop": PretrainingObjective, "mlm-only": PretrainingObjective, "classification": ClassifierObjective,
    "regression": ClassifierObjective, "klue-re": ClassifierObjective, "squad-v1": SquadObjective,
    "squad-v2": SquadObjective, "race": MultipleChoiceObjective, "token-classification": TokenClassificationObjective,
    "dependency-parsing": DependencyParsingObjective, "dialogue-state-tracking": DialogueStateTrackingObjective,
    "sentence-encoder": SentenceSimilarityObjective, "distillation": DistillationObjective,
}
PRETRAINING_CASES = {"mlm-sop": True, "mlm-only": False}  # -> sentence_order_prediction
# The cases also stepped under bfloat16: one per objective class. A class's other cases build the same model, whose
# outputs reach the loss in float32 (the heads cast them), so bfloat16 would only compile the same layers again.
BFLOAT16_CASES = {"mlm-sop", "classification", "squad-v2", "race", "token-classification", "dependency-parsing",
                  "dialogue-state-tracking", "sentence-encoder", "distillation"}


@pytest.fixture(scope="module")
def training_inputs(tmp_path_factory):
  """case -> (its objective, its training dataset), each built once for the module."""
  built = {}

  def get(name):
    if name not in built:
      if name in PRETRAINING_CASES:
        built[name] = pretraining_input(tmp_path_factory.mktemp(name), PRETRAINING_CASES[name])
      else:
        built[name] = finetuning_input(name)
      assert isinstance(built[name][0], CASES[name])
    return built[name]

  return get


def test_every_objective_has_a_case():
  assert set(CASES.values()) == objective_classes(), "an objective without a case here: add one"
  assert {CASES[name] for name in BFLOAT16_CASES} == objective_classes(), "an objective never stepped in bfloat16"


def flat_specs(structure, path=""):
  """(path, spec) of each tensor of a batch's nested dicts, e.g. ("inputs/input_word_ids", spec)."""
  for key, value in structure.items():
    if isinstance(value, dict):
      yield from flat_specs(value, f"{path}{key}/")
    else:
      yield f"{path}{key}", value


@requires_shared(SP8K_MODEL)
@pytest.mark.parametrize("name", CASES)
def test_every_training_dataset_has_static_shapes(training_inputs, name):
  _, dataset = training_inputs(name)
  specs = dict(flat_specs(dataset.element_spec))
  assert all(spec.shape.is_fully_defined() for spec in specs.values()), specs
  assert {spec.shape[0] for spec in specs.values()} == {BATCH}, specs  # a whole batch, always
  sequences = {path: spec.shape[1] for path, spec in specs.items() if path.rpartition("/")[2].startswith("input_")}
  assert sequences and set(sequences.values()) == {SEQ}, specs
  if name in PRETRAINING_CASES:
    assert {specs[f"masked_lm_{part}"].shape[1] for part in ("positions", "ids", "weights")} == {MAX_PREDICTIONS}


# --- one step, compiled and not ----------------------------------------------------------------------------------

@dataclasses.dataclass
class StepResult:
  loss: float  # the progress line's: the objective's metric of the step's sums
  weights: np.ndarray  # the trainable variables after the step, one vector


def one_step(model, optimizer, objective, batch, jit_compile: bool) -> StepResult:
  step = loop.replica_train_step(model, optimizer, objective, loss_scaling=False, jit_compile=jit_compile)
  sums = STRATEGY.run(step, args=(batch,))
  return StepResult(objective.metrics_from_sums(sums.numpy())["loss"], trainable_weights(model))


def trainable_weights(model) -> np.ndarray:
  return np.concatenate([variable.numpy().ravel() for variable in model.trainable_variables])


def steps_from_one_start(objective, batch, precision):
  """(the initial weights, the uncompiled step's result, the compiled step's) of a model and optimizer built as
  `loop.RunState` builds them: under the run's policy and seed, the optimizer's slots made before the first step."""
  with loop.run_settings(precision, SEED), STRATEGY.scope():
    if isinstance(objective, PretrainingObjective):
      model = albert_tf.AlbertPretrainer(CONFIG, objective.sentence_order_prediction)
    else:
      model = objective.build_model(CONFIG, dropout_prob=0.0)
    model(model.dummy_inputs(), training=False)
    optimizer_type = "lamb" if isinstance(objective, PretrainingObjective) else "adamw"  # the drivers' defaults
    optimizer = loop.create_optimizer(model, precision, loop.OptimizerSettings(optimizer_type, LEARNING_RATE, 10, 0))
  assert model.compute_dtype == precision  # a bfloat16 model computes in bfloat16
  state = model.variables + optimizer.variables()
  start = [variable.numpy() for variable in state]
  initial = trainable_weights(model)
  with loop.run_settings(precision, SEED):
    uncompiled = one_step(model, optimizer, objective, batch, jit_compile=False)
    for variable, value in zip(state, start):
      variable.assign(value)
    compiled = one_step(model, optimizer, objective, batch, jit_compile=True)
  return initial, uncompiled, compiled


@requires_shared(SP8K_MODEL)
@pytest.mark.parametrize("name", CASES)
def test_each_step_compiled_with_xla_gives_the_uncompiled_step_s_loss_and_weights(training_inputs, name):
  objective, dataset = training_inputs(name)
  batch = next(iter(dataset))
  initial, uncompiled, compiled = steps_from_one_start(objective, batch, "float32")
  assert np.isfinite(uncompiled.loss)
  assert abs(compiled.loss - uncompiled.loss) <= FLOAT32_LOSS_TOLERANCE, (compiled.loss, uncompiled.loss)
  # The step moves weights by more than the comparison tolerates (RACE's the least: its options look alike at first).
  assert np.max(np.abs(uncompiled.weights - initial)) > 10 * FLOAT32_WEIGHT_TOLERANCE
  np.testing.assert_allclose(compiled.weights, uncompiled.weights, rtol=0, atol=FLOAT32_WEIGHT_TOLERANCE)
  if name not in BFLOAT16_CASES:
    return
  initial_here, bfloat16_uncompiled, bfloat16_compiled = steps_from_one_start(objective, batch, "bfloat16")
  np.testing.assert_array_equal(initial_here, initial)  # the variables are float32 under both policies
  assert np.isfinite(bfloat16_uncompiled.loss)
  loss_tolerance = BFLOAT16_ROUNDING_UNIT * max(1.0, abs(bfloat16_uncompiled.loss))
  assert abs(bfloat16_compiled.loss - bfloat16_uncompiled.loss) <= loss_tolerance, (
      bfloat16_compiled.loss, bfloat16_uncompiled.loss)
  norm = np.linalg.norm
  bfloat16_error = norm(bfloat16_uncompiled.weights - uncompiled.weights)  # bfloat16's own, against float32
  assert norm(bfloat16_compiled.weights - bfloat16_uncompiled.weights) <= max(
      0.1 * norm(bfloat16_uncompiled.weights - initial), 3 * bfloat16_error)
