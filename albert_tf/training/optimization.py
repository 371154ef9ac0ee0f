"""Google's ALBERT optimizers (LAMB and AdamW) and learning-rate schedule, on the Model Garden's LAMB.

Google's TF1 `LAMBOptimizer` and `AdamWeightDecayOptimizer` are Adam without bias correction, plus decoupled
weight decay added to the update, plus (LAMB only) the layer-wise trust ratio. The Model Garden's `LAMB`
differs from Google's only by its bias correction, so `GoogleLAMB` subclasses it and replaces the update;
with `use_layer_adaptation=False` it is Google's AdamW.

Gradient clipping (global norm 1.0 in Google's code) is not done here: the training step clips the gradients
after aggregating them across replicas, before `apply_gradients`.
"""

import numbers

import tensorflow as tf
import tf_keras

from official.modeling.optimization import lamb

from albert_tf.errors import OptionError

EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")
OPTIMIZER_TYPES = ("lamb", "adamw")


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class WarmupPolynomialDecay(tf_keras.optimizers.schedules.LearningRateSchedule):
  """Google's ALBERT learning rate: polynomial decay from step 0, overridden by linear warmup.

  With `warmup_step = step - start_warmup_step`, the rate is `init_lr * warmup_step / num_warmup_steps`
  while `warmup_step < num_warmup_steps`, and otherwise
  `(init_lr - end_lr) * (1 - min(step, num_train_steps) / num_train_steps) ** poly_power + end_lr`.

  As in Google's code the decay counts from step 0, not from the end of warmup, so the rate drops at
  the end of warmup (from nearly `init_lr` to the decayed value), and steps before `start_warmup_step`
  fall in the warmup branch with a negative `warmup_step`: their rate is negative.

  Args:
    init_lr: the peak learning rate.
    num_train_steps: steps over which the rate decays to `end_lr`; it stays there afterwards.
    num_warmup_steps: length of the linear warmup; 0 for none.
    poly_power: power of the polynomial decay (1.0 is linear).
    start_warmup_step: the step at which warmup starts.
    end_lr: the rate at and after `num_train_steps`.
  """

  def __init__(self, init_lr, num_train_steps, num_warmup_steps, poly_power=1.0, start_warmup_step=0,
               end_lr=0.0):
    super().__init__()
    if num_train_steps <= 0:
      raise OptionError(f"num_train_steps must be positive, got {num_train_steps}.")
    if num_warmup_steps < 0:
      raise OptionError(f"num_warmup_steps must be >= 0, got {num_warmup_steps}.")
    # Floats, so that an integer init_lr still gives a float32 rate, as Google's tf.constant did.
    self.init_lr = float(init_lr)
    self.num_train_steps = num_train_steps
    self.num_warmup_steps = num_warmup_steps
    self.poly_power = float(poly_power)
    self.start_warmup_step = start_warmup_step
    self.end_lr = float(end_lr)
    self.polynomial_decay = tf_keras.optimizers.schedules.PolynomialDecay(
        self.init_lr, num_train_steps, end_learning_rate=self.end_lr, power=self.poly_power, cycle=False)

  def __call__(self, step):
    with tf.name_scope("WarmupPolynomialDecay"):
      decayed_lr = self.polynomial_decay(step)
      if not self.num_warmup_steps:
        return decayed_lr
      # Integer step arithmetic and float32 division, in Google's order, so the values are identical.
      warmup_step = tf.cast(step, tf.int32) - self.start_warmup_step
      warmup_lr = self.init_lr * (tf.cast(warmup_step, tf.float32) / float(self.num_warmup_steps))
      return tf.where(warmup_step < self.num_warmup_steps, warmup_lr, decayed_lr)

  def get_config(self):
    return {
        "init_lr": self.init_lr,
        "num_train_steps": self.num_train_steps,
        "num_warmup_steps": self.num_warmup_steps,
        "poly_power": self.poly_power,
        "start_warmup_step": self.start_warmup_step,
        "end_lr": self.end_lr,
    }


@tf_keras.utils.register_keras_serializable(package="albert_tf")
class GoogleLAMB(lamb.LAMB):
  """Google's `LAMBOptimizer` (or, without layer adaptation, its `AdamWeightDecayOptimizer`).

  For each variable `w` with gradient `g`:

      m = beta_1 * m + (1 - beta_1) * g
      v = beta_2 * v + (1 - beta_2) * g**2
      update = m / (sqrt(v) + epsilon)              # no bias correction
      update += weight_decay_rate * w               # unless excluded from weight decay
      r = ||w|| / ||update|| if both are > 0 else 1 # 1 if excluded from layer adaptation
      w -= learning_rate * r * update

  Exclusions are regular expressions searched (`re.search`) in the variable name without its `:0`.

  Args:
    learning_rate: a float, tensor or `LearningRateSchedule`.
    beta_1: decay of the first moment.
    beta_2: decay of the second moment.
    epsilon: added to `sqrt(v)`.
    weight_decay_rate: decoupled weight decay, added to the update before the trust ratio.
    exclude_from_weight_decay: patterns of variables without weight decay.
    exclude_from_layer_adaptation: patterns of variables without trust ratio; defaults to
      `exclude_from_weight_decay`, as in Google's code.
    use_layer_adaptation: False turns the trust ratio off for every variable, giving Google's AdamW.
    name: the optimizer's name.
    **kwargs: passed to `tf_keras.optimizers.legacy.Optimizer` (`clipnorm` and the like; the training
      step clips instead).
  """

  def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-6, weight_decay_rate=0.0,
               exclude_from_weight_decay=None, exclude_from_layer_adaptation=None, use_layer_adaptation=True,
               name="LAMB", **kwargs):
    super().__init__(
        learning_rate=learning_rate, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon,
        weight_decay_rate=weight_decay_rate, exclude_from_weight_decay=_as_list(exclude_from_weight_decay),
        exclude_from_layer_adaptation=_as_list(exclude_from_layer_adaptation), name=name, **kwargs)
    self.use_layer_adaptation = use_layer_adaptation

  def _set_hyper(self, name, value):
    super()._set_hyper(name, value)
    if name in ("beta_1", "beta_2"):
      # Google computes 1 - beta in Python (double) before rounding to float32; Keras would subtract in
      # float32 from float32(beta), which for beta_2 = 0.999 is 1.3e-5 (relative) off. Tensor or
      # callable betas have no exact value to keep.
      exact = float(value) if isinstance(value, numbers.Real) else None
      setattr(self, f"_exact_{name}", exact)

  def _prepare_local(self, var_device, var_dtype, apply_state):
    super()._prepare_local(var_device, var_dtype, apply_state)
    coefficients = apply_state[(var_device, var_dtype)]
    for name in ("beta_1", "beta_2"):
      exact = getattr(self, f"_exact_{name}")
      if exact is not None:
        coefficients[f"one_minus_{name}_t"] = tf.constant(1.0 - exact, var_dtype)

  def _resource_apply_dense(self, grad, var, apply_state=None):
    var_device, var_dtype = var.device, var.dtype.base_dtype
    coefficients = ((apply_state or {}).get((var_device, var_dtype))
                    or self._fallback_apply_state(var_device, var_dtype))
    m = self.get_slot(var, "m")
    v = self.get_slot(var, "v")
    m_t = m.assign(coefficients["beta_1_t"] * m + coefficients["one_minus_beta_1_t"] * grad,
                   use_locking=self._use_locking)
    v_t = v.assign(coefficients["beta_2_t"] * v + coefficients["one_minus_beta_2_t"] * tf.square(grad),
                   use_locking=self._use_locking)
    update = m_t / (tf.sqrt(v_t) + coefficients["epsilon"])

    var_name = self._get_variable_name(var.name)
    if self._do_use_weight_decay(var_name):
      update += coefficients["weight_decay_rate"] * var

    ratio = 1.0
    if self._do_layer_adaptation(var_name):
      w_norm = tf.norm(var, ord=2)
      update_norm = tf.norm(update, ord=2)
      ratio = tf.where(w_norm > 0, tf.where(update_norm > 0, w_norm / update_norm, 1.0), 1.0)
    return var.assign_sub(ratio * coefficients["lr_t"] * update, use_locking=self._use_locking)

  def _resource_apply_sparse(self, grad, var, indices, apply_state=None):
    # Google's TF1 code turned IndexedSlices into a dense gradient at its first arithmetic op: the weight
    # decay and the moments' decay touch every row anyway. Repeated indices are summed.
    dense_grad = tf.math.unsorted_segment_sum(grad, indices, num_segments=tf.shape(var)[0])
    return self._resource_apply_dense(dense_grad, var, apply_state)

  def _resource_apply_sparse_duplicate_indices(self, grad, handle, indices, **kwargs):
    # The densification sums repeated indices, so Keras's tf.unique pass (dynamic shapes, bad for XLA)
    # is not needed.
    return self._resource_apply_sparse(grad, handle, indices, **kwargs)

  def _do_layer_adaptation(self, param_name):
    return self.use_layer_adaptation and super()._do_layer_adaptation(param_name)

  def get_config(self):
    config = super().get_config()
    for name in ("beta_1", "beta_2"):
      exact = getattr(self, f"_exact_{name}")
      if exact is not None:
        config[name] = exact
    config.update({
        "exclude_from_weight_decay": self.exclude_from_weight_decay,
        "exclude_from_layer_adaptation": self.exclude_from_layer_adaptation,
        "use_layer_adaptation": self.use_layer_adaptation,
    })
    return config


def _as_list(patterns):
  return None if patterns is None else list(patterns)


def create_optimizer(init_lr, num_train_steps, num_warmup_steps, optimizer_type="lamb", poly_power=1.0,
                     start_warmup_step=0, weight_decay_rate=0.01) -> tf_keras.optimizers.legacy.Optimizer:
  """Google's ALBERT optimizer: LAMB or AdamW on `WarmupPolynomialDecay`, as in its `create_optimizer`.

  beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-6, and no weight decay for LayerNorm parameters or biases.
  Clip the gradients (global norm 1.0) before `apply_gradients`.

  Args:
    init_lr: the peak learning rate.
    num_train_steps: steps over which the rate decays to 0.
    num_warmup_steps: steps of linear warmup; 0 for none.
    optimizer_type: "lamb" or "adamw".
    poly_power: power of the polynomial decay.
    start_warmup_step: the step at which warmup starts.
    weight_decay_rate: decoupled weight decay.

  Returns:
    A `GoogleLAMB`, with layer adaptation for "lamb" and without it for "adamw".

  Raises:
    ValueError: an unknown `optimizer_type`, or steps out of range.
  """
  if optimizer_type not in OPTIMIZER_TYPES:
    raise OptionError(f"Unknown optimizer_type {optimizer_type!r}; expected one of {OPTIMIZER_TYPES}.")
  schedule = WarmupPolynomialDecay(init_lr, num_train_steps, num_warmup_steps, poly_power=poly_power,
                                   start_warmup_step=start_warmup_step)
  is_lamb = optimizer_type == "lamb"
  return GoogleLAMB(
      learning_rate=schedule, beta_1=0.9, beta_2=0.999, epsilon=1e-6, weight_decay_rate=weight_decay_rate,
      exclude_from_weight_decay=EXCLUDE_FROM_WEIGHT_DECAY, use_layer_adaptation=is_lamb,
      name="LAMB" if is_lamb else "AdamWeightDecay")
