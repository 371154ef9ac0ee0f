"""Google's ALBERT LAMB/AdamW update and learning-rate schedule, against hand-computed numbers."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official.modeling.optimization import lamb

from albert_tf.training.optimization import (EXCLUDE_FROM_WEIGHT_DECAY, GoogleLAMB, WarmupPolynomialDecay,
                                             create_optimizer)

KERNEL = "albert_pretrainer/encoder/group_0_inner_0/query/kernel"
BIAS = "albert_pretrainer/encoder/group_0_inner_0/query/bias"
GAMMA = "albert_pretrainer/encoder/embeddings/LayerNorm/gamma"
W0 = [3.0, 4.0]  # ||w|| = 5
G1 = [0.5, -1.0]
G2 = [-0.25, 2.0]
LR, WD = 0.1, 0.01

# Step 1, from m = v = 0 (no bias correction):
#   m = 0.1 * g = [0.05, -0.1];  v = 0.001 * g^2 = [0.00025, 0.001];  sqrt(v) = [0.0158113883, 0.0316227766]
#   adam = m / (sqrt(v) + 1e-6) = [3.1620776728, -3.1621776633]
#   kernel: update = adam + 0.01 * w = [3.1920776728, -3.1221776633], ||update|| = 4.4651263398
#     LAMB:  r = 5 / 4.4651263398 = 1.1197891436;  w - 0.1 * r * update = [2.6425546077, 4.3496180652]
#     AdamW: w - 0.1 * update = [2.6807922327, 4.3122177663]
#   bias, LayerNorm: no decay and r = 1: w - 0.1 * adam = [2.6837922327, 4.3162177663]
LAMB_KERNEL_STEP1 = [2.6425546077, 4.3496180652]
ADAMW_KERNEL_STEP1 = [2.6807922327, 4.3122177663]
EXCLUDED_STEP1 = [2.6837922327, 4.3162177663]
# With Adam's bias correction (m / 0.1 = g, v / 0.001 = g^2) LAMB would give this instead.
BIAS_CORRECTED_LAMB_KERNEL_STEP1 = [2.6342364286, 4.3409061598]


def google_step(w, m, v, g, lr, decay, adapt):
  """One step of Google's TF1 LAMB/AdamW in float64 numpy."""
  m = 0.9 * m + 0.1 * g
  v = 0.999 * v + 0.001 * g * g
  update = m / (np.sqrt(v) + 1e-6)
  if decay:
    update = update + WD * w
  ratio = 1.0
  if adapt and np.linalg.norm(w) > 0 and np.linalg.norm(update) > 0:
    ratio = np.linalg.norm(w) / np.linalg.norm(update)
  return w - lr * ratio * update, m, v


def make_variables(names, value=W0):
  return [tf.Variable(value, name=name) for name in names]


def google_optimizer(use_layer_adaptation=True, learning_rate=LR):
  return GoogleLAMB(learning_rate=learning_rate, weight_decay_rate=WD,
                    exclude_from_weight_decay=EXCLUDE_FROM_WEIGHT_DECAY,
                    use_layer_adaptation=use_layer_adaptation)


def test_variable_names_keep_their_scopes():
  assert make_variables([KERNEL])[0].name == KERNEL + ":0"


def test_lamb_first_step_matches_hand_computed_numbers():
  variables = make_variables([KERNEL, BIAS, GAMMA])
  google_optimizer().apply_gradients([(tf.constant(G1), var) for var in variables])
  np.testing.assert_allclose(variables[0].numpy(), LAMB_KERNEL_STEP1, rtol=1e-6)
  np.testing.assert_allclose(variables[1].numpy(), EXCLUDED_STEP1, rtol=1e-6)
  np.testing.assert_allclose(variables[2].numpy(), EXCLUDED_STEP1, rtol=1e-6)


def test_lamb_has_no_bias_correction_unlike_the_model_garden():
  ours, theirs = make_variables([KERNEL, KERNEL])
  google_optimizer().apply_gradients([(tf.constant(G1), ours)])
  model_garden = lamb.LAMB(learning_rate=LR, weight_decay_rate=WD,
                           exclude_from_weight_decay=list(EXCLUDE_FROM_WEIGHT_DECAY))
  model_garden.apply_gradients([(tf.constant(G1), theirs)])
  np.testing.assert_allclose(theirs.numpy(), BIAS_CORRECTED_LAMB_KERNEL_STEP1, rtol=1e-6)
  assert np.abs(ours.numpy() - theirs.numpy()).max() > 1e-3


def test_adamw_first_step_matches_hand_computed_numbers():
  variables = make_variables([KERNEL, BIAS, GAMMA])
  google_optimizer(use_layer_adaptation=False).apply_gradients([(tf.constant(G1), var) for var in variables])
  np.testing.assert_allclose(variables[0].numpy(), ADAMW_KERNEL_STEP1, rtol=1e-6)
  np.testing.assert_allclose(variables[1].numpy(), EXCLUDED_STEP1, rtol=1e-6)
  np.testing.assert_allclose(variables[2].numpy(), EXCLUDED_STEP1, rtol=1e-6)


@pytest.mark.parametrize("adapt", [True, False], ids=["lamb", "adamw"])
def test_two_steps_match_the_reference_formula(adapt):
  names = [KERNEL, BIAS, GAMMA]
  variables = make_variables(names)
  optimizer = google_optimizer(use_layer_adaptation=adapt)
  expected = {name: (np.array(W0), np.zeros(2), np.zeros(2)) for name in names}
  for gradient in (G1, G2):
    optimizer.apply_gradients([(tf.constant(gradient), var) for var in variables])
    for name in names:
      w, m, v = expected[name]
      expected[name] = google_step(w, m, v, np.array(gradient), LR, decay=name == KERNEL,
                                   adapt=adapt and name == KERNEL)
  for name, var in zip(names, variables):
    np.testing.assert_allclose(var.numpy(), expected[name][0], rtol=1e-6, err_msg=name)
    np.testing.assert_allclose(optimizer.get_slot(var, "m").numpy(), expected[name][1], rtol=1e-6)
    np.testing.assert_allclose(optimizer.get_slot(var, "v").numpy(), expected[name][2], rtol=1e-6)


def test_one_minus_beta_is_rounded_from_double_precision_as_in_google_code():
  var = make_variables([KERNEL])[0]
  optimizer = google_optimizer()
  optimizer.apply_gradients([(tf.constant(G1), var)])
  # Google multiplies by float32(1.0 - 0.999); 1 - float32(0.999) would be 0.00099998713.
  g = np.array(G1, np.float32)
  np.testing.assert_array_equal(optimizer.get_slot(var, "v").numpy(), np.float32(1.0 - 0.999) * g * g)
  np.testing.assert_array_equal(optimizer.get_slot(var, "m").numpy(), np.float32(1.0 - 0.9) * g)


def test_weight_decay_exclusions_on_model_variable_names():
  decayed = ["albert_pretrainer/encoder/group_0_inner_0/query/kernel",
             "albert_pretrainer/encoder/embeddings/word_embeddings",
             "albert_pretrainer/encoder/embeddings/embedding_hidden_mapping_in/kernel",
             "albert_pretrainer/seq_relationship/output_weights"]
  excluded = ["albert_pretrainer/encoder/group_0_inner_0/attention_layer_norm/gamma",
              "albert_pretrainer/encoder/group_0_inner_0/output_layer_norm/beta",
              "albert_pretrainer/encoder/embeddings/LayerNorm/beta",
              "albert_pretrainer/predictions/LayerNorm/gamma",
              "albert_pretrainer/encoder/group_0_inner_0/query/bias",
              "albert_pretrainer/predictions/output_bias",
              "albert_pretrainer/seq_relationship/output_bias"]
  variables = make_variables(decayed + excluded)
  # A zero gradient leaves m = v = 0, so AdamW moves a variable only by its weight decay.
  optimizer = create_optimizer(LR, num_train_steps=10, num_warmup_steps=0, optimizer_type="adamw")
  optimizer.apply_gradients([(tf.zeros(2), var) for var in variables])
  for name, var in zip(decayed + excluded, variables):
    expected = np.array(W0) * (1 - LR * WD) if name in decayed else W0
    np.testing.assert_allclose(var.numpy(), expected, rtol=1e-6, err_msg=name)


def embedding_gradient(table, ids):
  with tf.GradientTape() as tape:
    loss = tf.reduce_sum(tf.gather(table, ids) * tf.reshape(tf.range(12, dtype=tf.float32), [4, 3]))
  return tape.gradient(loss, table)


@pytest.mark.parametrize("optimizer_type", ["lamb", "adamw"])
def test_sparse_gradient_matches_dense(optimizer_type):
  init = np.arange(15, dtype=np.float32).reshape(5, 3) / 7.0
  sparse_table = tf.Variable(init, name="albert_pretrainer/encoder/embeddings/word_embeddings")
  dense_table = tf.Variable(init, name="albert_pretrainer/encoder/embeddings/word_embeddings")
  sparse_optimizer = create_optimizer(LR, 10, 0, optimizer_type=optimizer_type)
  dense_optimizer = create_optimizer(LR, 10, 0, optimizer_type=optimizer_type)
  for ids in ([1, 3, 1, 0], [4, 4, 2, 1]):  # repeated ids must be summed
    gradient = embedding_gradient(sparse_table, tf.constant(ids))
    assert isinstance(gradient, tf.IndexedSlices)
    sparse_optimizer.apply_gradients([(gradient, sparse_table)])
    dense_optimizer.apply_gradients([(tf.convert_to_tensor(gradient), dense_table)])
  np.testing.assert_allclose(sparse_table.numpy(), dense_table.numpy(), rtol=1e-6)
  assert not np.allclose(sparse_table.numpy(), init)


# init_lr 2, 100 steps, 20 warmup steps: warmup 0.1 per step; linear decay 0.02 per step from step 0.
@pytest.mark.parametrize("step, expected", [
    (0, 0.0), (10, 1.0), (19, 1.9),
    (20, 1.6),  # the end of warmup drops to the decay measured from step 0: 2 * (1 - 20 / 100)
    (60, 0.8), (100, 0.0), (150, 0.0)])
def test_schedule_warmup_then_decay(step, expected):
  schedule = WarmupPolynomialDecay(2.0, num_train_steps=100, num_warmup_steps=20)
  np.testing.assert_allclose(schedule(step).numpy(), expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("step, expected", [
    (0, -0.5), (4, -0.1),  # before the warmup start Google's formula gives a negative rate
    (5, 0.0), (15, 1.0), (24, 1.9), (25, 1.5), (60, 0.8), (100, 0.0)])
def test_schedule_with_late_warmup_start(step, expected):
  schedule = WarmupPolynomialDecay(2.0, num_train_steps=100, num_warmup_steps=20, start_warmup_step=5)
  np.testing.assert_allclose(schedule(step).numpy(), expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("warmup, power, step, expected", [
    (0, 1.0, 0, 2.0), (0, 1.0, 50, 1.0), (0, 1.0, 100, 0.0),
    (0, 2.0, 50, 0.5), (20, 2.0, 10, 1.0), (20, 2.0, 20, 1.28), (20, 2.0, 200, 0.0)])
def test_schedule_without_warmup_and_with_power_2(warmup, power, step, expected):
  schedule = WarmupPolynomialDecay(2.0, num_train_steps=100, num_warmup_steps=warmup, poly_power=power)
  np.testing.assert_allclose(schedule(step).numpy(), expected, rtol=1e-6, atol=1e-7)


def google_learning_rate(init_lr, step, num_train_steps, num_warmup_steps, poly_power, start_warmup_step):
  """Google's TF1 expression: tf.compat.v1 polynomial decay, then the warmup blend in int32/float32."""
  learning_rate = tf.compat.v1.train.polynomial_decay(
      tf.constant(init_lr, tf.float32), tf.constant(step, tf.int64), num_train_steps, end_learning_rate=0.0,
      power=poly_power, cycle=False)()
  warmup_step = tf.constant(step, tf.int32) - start_warmup_step
  warmup_learning_rate = init_lr * (tf.cast(warmup_step, tf.float32) / float(num_warmup_steps))
  is_warmup = tf.cast(warmup_step < num_warmup_steps, tf.float32)
  return (1.0 - is_warmup) * learning_rate + is_warmup * warmup_learning_rate


@pytest.mark.parametrize("power, start", [(1.0, 0), (2.0, 0), (1.0, 7)])
def test_schedule_is_bitwise_google(power, start):
  schedule = WarmupPolynomialDecay(1.76e-3, num_train_steps=1000, num_warmup_steps=31, poly_power=power,
                                   start_warmup_step=start)
  for step in list(range(0, 45)) + [333, 999, 1000, 1001]:
    expected = google_learning_rate(1.76e-3, step, 1000, 31, power, start).numpy()
    assert schedule(tf.constant(step, tf.float32)).numpy() == expected, step


def test_schedule_takes_the_optimizer_float_step():
  schedule = WarmupPolynomialDecay(2.0, num_train_steps=100, num_warmup_steps=20)
  np.testing.assert_allclose(schedule(tf.constant(10.0)).numpy(), 1.0, rtol=1e-6)


def test_schedule_config_round_trip():
  schedule = WarmupPolynomialDecay(2.0, 100, 20, poly_power=2.0, start_warmup_step=5, end_lr=0.1)
  restored = tf_keras.optimizers.schedules.deserialize(tf_keras.optimizers.schedules.serialize(schedule))
  assert isinstance(restored, WarmupPolynomialDecay)
  assert restored.get_config() == schedule.get_config()
  for step in (0, 7, 25, 60, 100, 120):
    assert restored(step).numpy() == schedule(step).numpy()


def test_schedule_rejects_bad_steps():
  with pytest.raises(ValueError, match="num_train_steps"):
    WarmupPolynomialDecay(1.0, 0, 0)
  with pytest.raises(ValueError, match="num_warmup_steps"):
    WarmupPolynomialDecay(1.0, 10, -1)


def test_create_optimizer_types():
  lamb_optimizer = create_optimizer(1e-3, 100, 10, optimizer_type="lamb", poly_power=2.0, start_warmup_step=3)
  adamw_optimizer = create_optimizer(1e-3, 100, 10, optimizer_type="adamw", weight_decay_rate=0.02)
  for optimizer in (lamb_optimizer, adamw_optimizer):
    assert isinstance(optimizer, GoogleLAMB)
    assert isinstance(optimizer, tf_keras.optimizers.legacy.Optimizer)
    assert optimizer.exclude_from_weight_decay == list(EXCLUDE_FROM_WEIGHT_DECAY)
    config = optimizer.get_config()
    assert (config["beta_1"], config["beta_2"], config["epsilon"]) == (0.9, 0.999, 1e-6)
  assert lamb_optimizer.use_layer_adaptation and not adamw_optimizer.use_layer_adaptation
  assert lamb_optimizer.get_config()["learning_rate"]["config"]["poly_power"] == 2.0
  assert lamb_optimizer.get_config()["learning_rate"]["config"]["start_warmup_step"] == 3
  assert adamw_optimizer.get_config()["weight_decay_rate"] == pytest.approx(0.02)


def test_create_optimizer_rejects_unknown_type():
  with pytest.raises(ValueError, match="'adam'"):
    create_optimizer(1e-3, 100, 10, optimizer_type="adam")


def run_steps(optimizer_type, wrap):
  """Three steps of a warmup schedule on a kernel and a bias, with `apply_gradients` wrapped by `wrap`."""
  variables = make_variables([KERNEL, BIAS])
  optimizer = create_optimizer(0.3, num_train_steps=10, num_warmup_steps=2, optimizer_type=optimizer_type)

  def apply(gradients):
    optimizer.apply_gradients(zip(gradients, variables))

  apply = wrap(apply)
  for gradient in (G1, G2, G1):
    apply([tf.constant(gradient)] * 2)
  return [var.numpy() for var in variables] + [optimizer.iterations.numpy()]


@pytest.mark.parametrize("optimizer_type", ["lamb", "adamw"])
def test_tf_function_and_xla_match_eager(optimizer_type):
  eager = run_steps(optimizer_type, lambda fn: fn)
  graph = run_steps(optimizer_type, tf.function)
  xla = run_steps(optimizer_type, lambda fn: tf.function(fn, jit_compile=True))
  assert eager[-1] == graph[-1] == xla[-1] == 3
  for eager_value, graph_value, xla_value in zip(eager, graph, xla):
    np.testing.assert_allclose(graph_value, eager_value, rtol=1e-6)
    np.testing.assert_allclose(xla_value, eager_value, rtol=1e-6)
  assert not np.allclose(eager[0], W0)


def test_sparse_gradient_under_xla():
  init = np.arange(15, dtype=np.float32).reshape(5, 3) / 7.0
  tables = [tf.Variable(init, name="embeddings/word_embeddings") for _ in range(2)]
  optimizers = [create_optimizer(LR, 10, 0) for _ in range(2)]

  def step(index, ids):
    gradient = embedding_gradient(tables[index], ids)
    optimizers[index].apply_gradients([(gradient, tables[index])])

  step(0, tf.constant([1, 3, 1, 0]))
  tf.function(step, jit_compile=True)(1, tf.constant([1, 3, 1, 0]))
  np.testing.assert_allclose(tables[1].numpy(), tables[0].numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("optimizer_type", ["lamb", "adamw"])
def test_optimizer_config_round_trip(optimizer_type):
  optimizer = create_optimizer(1e-3, 100, 10, optimizer_type=optimizer_type, start_warmup_step=2)
  # Applying creates the hyperparameter variables, whose float32 betas must not leak into the config.
  optimizer.apply_gradients([(tf.constant(G1), make_variables([KERNEL])[0])])
  config = optimizer.get_config()
  restored = GoogleLAMB.from_config(dict(config))  # from_config replaces the schedule's dict in place
  assert restored.use_layer_adaptation == (optimizer_type == "lamb")
  assert restored.exclude_from_weight_decay == list(EXCLUDE_FROM_WEIGHT_DECAY)
  assert restored.exclude_from_layer_adaptation == list(EXCLUDE_FROM_WEIGHT_DECAY)
  assert isinstance(restored.learning_rate, WarmupPolynomialDecay)
  assert restored.get_config() == config
  assert (config["beta_1"], config["beta_2"]) == (0.9, 0.999)


def test_optimizer_config_keeps_custom_layer_adaptation_exclusions():
  optimizer = GoogleLAMB(exclude_from_weight_decay=["bias"], exclude_from_layer_adaptation=["LayerNorm"])
  restored = GoogleLAMB.from_config(optimizer.get_config())
  assert restored.exclude_from_weight_decay == ["bias"]
  assert restored.exclude_from_layer_adaptation == ["LayerNorm"]
  assert restored.use_layer_adaptation


def reference_step(w, g, beta_1, beta_2, epsilon, lr, decay, adapt):
  """One first step of Google's update (m = v = 0 before it) with any hyperparameters, in float64."""
  m, v = (1 - beta_1) * g, (1 - beta_2) * g * g
  update = m / (np.sqrt(v) + epsilon) + (WD * w if decay else 0.0)
  w_norm, update_norm = np.linalg.norm(w), np.linalg.norm(update)
  ratio = w_norm / update_norm if adapt and w_norm > 0 and update_norm > 0 else 1.0
  return w - lr * ratio * update


def test_every_hyperparameter_reaches_the_update():
  """Not Google's defaults, so that a hyperparameter dropped on its way to the update shows."""
  variables = make_variables([KERNEL, BIAS])
  optimizer = GoogleLAMB(learning_rate=LR, beta_1=0.5, beta_2=0.75, epsilon=0.1, weight_decay_rate=WD,
                         exclude_from_weight_decay=EXCLUDE_FROM_WEIGHT_DECAY)
  optimizer.apply_gradients([(tf.constant(G1), var) for var in variables])
  for var, decay in zip(variables, (True, False)):
    np.testing.assert_allclose(var.numpy(), reference_step(np.array(W0), np.array(G1), 0.5, 0.75, 0.1, LR, decay,
                                                           adapt=decay), rtol=1e-6, err_msg=var.name)


@pytest.mark.parametrize("w,g,expected_ratio", [
    ([0.0, 0.0], G1, 1.0),  # a zero weight: no trust ratio (else it would never move)
    ([0.3, 0.4], G1, None),  # ||w|| = 0.5 < 1: the ratio applies all the same
    ([3.0, 4.0], [1e-9, -1e-9], None),  # a gradient far below epsilon: ||update|| < 1, ratio applies
], ids=["zero_weight", "small_weight", "small_update"])
def test_trust_ratio_edge_cases(w, g, expected_ratio):
  var = tf.Variable(w, name=KERNEL)
  GoogleLAMB(learning_rate=LR, exclude_from_weight_decay=EXCLUDE_FROM_WEIGHT_DECAY).apply_gradients(
      [(tf.constant(g), var)])
  w, g = np.array(w), np.array(g)
  update = 0.1 * g / (np.sqrt(0.001 * g * g) + 1e-6)
  ratio = expected_ratio or np.linalg.norm(w) / np.linalg.norm(update)
  np.testing.assert_allclose(var.numpy(), w - LR * ratio * update, rtol=1e-5, atol=1e-12)


def test_a_zero_update_leaves_the_weight_and_stays_finite():
  var = tf.Variable(W0, name=KERNEL)
  GoogleLAMB(learning_rate=LR).apply_gradients([(tf.constant([0.0, 0.0]), var)])  # no decay, zero gradient
  np.testing.assert_array_equal(var.numpy(), W0)


def test_names_schedule_start_and_exact_betas_of_the_optimizers():
  lamb_optimizer, adamw_optimizer = create_optimizer(1.0, 10, 4), create_optimizer(1.0, 10, 4, "adamw")
  assert (lamb_optimizer.get_config()["name"], adamw_optimizer.get_config()["name"]) == ("LAMB", "AdamWeightDecay")
  # Warmup starts at step 0: the rate at step 2 of 4 is half the peak.
  assert float(lamb_optimizer.learning_rate(2)) == pytest.approx(0.5)
  optimizer = GoogleLAMB(beta_1=0.85, beta_2=0.995, clipnorm=2.0)
  optimizer.apply_gradients([(tf.constant(G1), make_variables([KERNEL])[0])])  # hyperparameters become float32
  config = optimizer.get_config()
  assert (config["beta_1"], config["beta_2"]) == (0.85, 0.995)  # the exact floats, not their float32 values
  assert (config["name"], config["clipnorm"]) == ("LAMB", 2.0)  # Keras arguments reach the base class
  GoogleLAMB(beta_1=lambda: 0.9)  # a callable beta has no exact value to keep, and is accepted
  WarmupPolynomialDecay(1.0, 1, 0)  # one step is a valid schedule
