"""Our batches through transformers' PyTorch models (the Hugging Face parity tests)."""

import torch


def torch_inputs(batch):
  """Our padded batch as transformers' keyword inputs."""
  return {name: torch.tensor(batch[key].numpy(), dtype=torch.long) for name, key in (
      ("input_ids", "input_word_ids"), ("attention_mask", "input_mask"), ("token_type_ids", "input_type_ids"))}


def hf_logits(hf_model, batch):
  hf_model.eval()
  with torch.no_grad():
    return hf_model(**torch_inputs(batch)).logits.numpy()
