"""The sentence encoder's head in the registry: its pooling and projection, rebuilt from the task.json of its
run; exported to Hugging Face as `AlbertModel` plus the sentence-transformers modules that compute its
embedding; served with its own `sentence_embedding`."""

from typing import Dict, List, Optional

from albert_tf.errors import CheckpointMismatchError
from albert_tf.interop import sentence_transformers_folders as st_folders
from albert_tf.modeling import task_heads
from albert_tf.modeling.config import AlbertConfig
from albert_tf.serving.saved_model import AlbertServingModule, TextPacking
from albert_tf.tasks.similarity.model import AlbertSentenceEncoder
from albert_tf.text.graph_tokenizer import GraphTokenizer

# The task.json key of the encoder's pooling and projection, which `rebuild` reads back.
SENTENCE_EMBEDDING_INFO = "sentence_embedding"


def embedding_info(pooling: str, projection_dim: Optional[int]) -> Dict:
  """The task.json entry that `rebuild` reads back: the encoder's pooling and projection."""
  return {SENTENCE_EMBEDDING_INFO: {"pooling": pooling, "projection_dim": projection_dim}}


def run_info(model: AlbertSentenceEncoder) -> Dict:
  return embedding_info(model.pooling, model.projection_dim)


def rebuild(config: AlbertConfig, shapes: Dict[str, List[int]], task_info: Dict) -> AlbertSentenceEncoder:
  del shapes  # the pooling is in no variable: task.json says both
  info = task_info.get(SENTENCE_EMBEDDING_INFO)
  if info is None:
    raise CheckpointMismatchError(
        "The checkpoint is a sentence encoder's, but its pooling and projection are unknown: the task.json that "
        f"train_sentence_encoder wrote beside it is missing or has no '{SENTENCE_EMBEDDING_INFO}'. Copy it "
        "beside the checkpoint.")
  model = AlbertSentenceEncoder(config, info["pooling"], info.get("projection_dim"))
  model(model.dummy_inputs(), training=False)
  return model


def weight_names(head) -> List:
  # The projection has no place in Google's or transformers' ALBERT: a sentence-transformers Dense module holds
  # it (`sentence_transformers_modules`).
  del head
  return []


def hf_config(model: AlbertSentenceEncoder) -> Dict:
  del model
  return {"architectures": ["AlbertModel"]}


def sentence_transformers_modules(model: AlbertSentenceEncoder,
                                  max_seq_length: Optional[int] = None) -> st_folders.SentenceTransformersHead:
  """The sentence-transformers modules that compute the built encoder's embedding.

  Args:
    model: the sentence encoder, with its weights restored.
    max_seq_length: the length sentence-transformers cuts texts to; default `max_position_embeddings`.

  Raises:
    OptionError: a `max_seq_length` out of range, or a projection sentence-transformers cannot compute.
  """
  config = model.config
  max_seq_length = config.max_position_embeddings if max_seq_length is None else max_seq_length
  config.check_max_seq_length(max_seq_length)
  projection = model.sentence_head.projection
  dense = () if projection is None else (st_folders.dense_module(projection),)
  return st_folders.SentenceTransformersHead(model.pooling, dense, normalize=True, max_seq_length=max_seq_length,
                                             hidden_size=config.hidden_size)


def serving_module(model: AlbertSentenceEncoder, tokenizer: GraphTokenizer, packing: TextPacking,
                   asset_files: Optional[dict], task_options=None) -> AlbertServingModule:
  """`task_heads.TaskHead.serving_module`: the encoder's signatures, `sentence_embedding` with its own pooling
  and projection."""
  del task_options
  return AlbertServingModule(model, tokenizer, packing, asset_files=asset_files, embedding_head=model.sentence_head)


# No transformers class holds the head (hf_architecture None): a sentence-transformers folder converts to its
# encoder. Google's checkpoints hold none (google_scope None).
SENTENCE_ENCODER_HEAD = task_heads.register(task_heads.TaskHead(
    attribute="sentence_head", description="sentence embedding head", model_class=AlbertSentenceEncoder,
    weight_names=weight_names, rebuild=rebuild, serving_module=serving_module, hf_config=hf_config,
    run_info=run_info, sentence_transformers_modules=sentence_transformers_modules))
