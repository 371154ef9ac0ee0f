#!/usr/bin/env bash
# Which rule of what a word is (create_pretraining_data --word_boundaries=google|sentencepiece|morpheme) gives
# the better Korean model: the same model pretrained on the same text for the same steps under each rule, then
# fine-tuned on the same KLUE-NER split, with one table at the end.
#
#   benchmarks/compare_word_boundaries.sh [work_dir]     (about 24 minutes on 2 busy CPU cores)
#   PRETRAIN_STEPS=3000 FINETUNE_SEEDS="1 2 3" benchmarks/compare_word_boundaries.sh /tmp/wb_longer
#
# One Kiwi-pretokenized vocabulary for all three rules (morpheme needs one, and so only the rule differs), trained
# on the Korean shared corpora; create_pretraining_data with the same seed holds out the same documents
# (EVAL_FRACTION) under each rule, so the held-out records differ only in their masks. Masks differ per rule, so a
# model's accuracy on its own rule's held-out records is not comparable across rules: every model is also scored
# on every rule's held-out records, the google ones being the shared column. Fine-tuning: KLUE-NER (named
# entities, tagged per character, so the entities are word-level, which is what the rules change), the shared
# part of its dev split cut by a fixed rule (every 5th sentence to dev: 2,400 train, 600 dev), scored once after
# the last step (no checkpoint picked on dev), for each seed of FINETUNE_SEEDS: entity F1 and character F1, KLUE's
# two scores, on the dev part. (KLUE-NLI was the task before: a 64-wide model stayed at chance on it.)
#
# A stage whose outputs exist is skipped (the vocabulary, each rule's records, each pretraining run once scored at
# PRETRAIN_STEPS, each cross evaluation, each fine-tuning run once scored at FINETUNE_STEPS), so running the
# script again redoes only what is missing or was interrupted (the tools resume from their checkpoints). A change
# of any other setting needs a new work_dir, or the outputs it affects deleted.
#
# At scale (a TPU VM, whose local disk TensorFlow reads; your corpus in Google's format; KLUE's official NER files
# in $KLUE_NER_DIR, i.e. klue-ner-v1.1_{train,dev}.tsv; paths absolute or relative to the checkout), the same
# script with:
#   CORPUS=my_ko_corpus/*.txt VOCAB_SIZE=32000 CONFIG=configs/albert_base.json SEQ=512 PREDICTIONS=20 DUPE=10 \
#   PRETRAIN_STEPS=125000 PRETRAIN_BATCH=4096 PRETRAIN_LR=0.00176 PRETRAIN_WARMUP=3125 \
#   FINETUNE_SEQ=128 FINETUNE_STRIDE=64 FINETUNE_STEPS=3000 FINETUNE_LR=5e-5 FINETUNE_SEEDS="1 2 3" \
#   KLUE_NER_DIR=klue/klue-ner-v1.1 STRATEGY="--strategy_type=tpu --tpu_name=local" \
#   benchmarks/compare_word_boundaries.sh /mnt/disks/wb
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${1:-/tmp/compare_wb}
PY=${PYTHON:-.venv/bin/python}
SHARED=${SHARED:-../shared}
CORPUS=${CORPUS:-$SHARED/corpus/ko_law.txt,$SHARED/corpus/ko_libreoffice_help.txt}
VOCAB_SIZE=${VOCAB_SIZE:-6000}  # the shared Korean corpora support little more (docs/benchmarks.md)
CONFIG=${CONFIG:-configs/albert_tiny.json}
SEQ=${SEQ:-64}
PREDICTIONS=${PREDICTIONS:-10}
DUPE=${DUPE:-3}
EVAL_FRACTION=${EVAL_FRACTION:-0.1}
PRETRAIN_STEPS=${PRETRAIN_STEPS:-600}
PRETRAIN_BATCH=${PRETRAIN_BATCH:-32}
PRETRAIN_LR=${PRETRAIN_LR:-5e-3}
PRETRAIN_WARMUP=${PRETRAIN_WARMUP:-$((PRETRAIN_STEPS / 10))}
FINETUNE_SEQ=${FINETUNE_SEQ:-64}  # 14% of the sentences need a second window; 96 holds 99% in one
FINETUNE_STRIDE=${FINETUNE_STRIDE:-32}  # pieces between the starts of a long sentence's windows
FINETUNE_STEPS=${FINETUNE_STEPS:-600}
FINETUNE_BATCH=${FINETUNE_BATCH:-32}
FINETUNE_LR=${FINETUNE_LR:-3e-4}  # 1e-3 left the 64-wide models tagging everything O; BERT uses 5e-5
FINETUNE_SEEDS=${FINETUNE_SEEDS:-1 2}
KLUE_NER_DIR=${KLUE_NER_DIR:-}
STRATEGY=${STRATEGY:-}
RULES=(google sentencepiece morpheme)
mkdir -p "$WORK"

# Whether DIR's eval_results.txt scored step STEPS: the run (training, evaluation or both) is done.
scored_at() { grep -qx "global_step = $2" "$1/eval_results.txt" 2>/dev/null; }

SPM=$WORK/spiece.model
if [[ -e $SPM ]]; then  # written last, after its .vocab and options
  echo "== vocabulary: $SPM exists"
else
  echo "== vocabulary: $VOCAB_SIZE pieces, Kiwi-pretokenized"
  $PY tools/train_sentencepiece.py --input="$CORPUS" --model_prefix="$WORK/spiece" --vocab_size="$VOCAB_SIZE" \
      --pretokenizer=kiwi
fi
# CONFIG with the vocabulary's size: fine-tuning refuses a SentencePiece model of another size than the config's.
MODEL_CONFIG=$WORK/albert_config.json
$PY -c 'import json, sys; c = json.load(open(sys.argv[1])); c["vocab_size"] = int(sys.argv[2]); print(json.dumps(c))' \
    "$CONFIG" "$VOCAB_SIZE" > "$MODEL_CONFIG"

for rule in "${RULES[@]}"; do
  # Both record files are renamed into place only when the whole run succeeded.
  if [[ -e $WORK/$rule/train.tfrecord && -e $WORK/$rule/eval.tfrecord ]]; then
    echo "== $rule: pretraining data exist"
  else
    echo "== $rule: pretraining data"
    $PY tools/create_pretraining_data.py --input_file="$CORPUS" --spm_model_file="$SPM" --word_boundaries="$rule" \
        --output_file="$WORK/$rule/train.tfrecord" --eval_output_file="$WORK/$rule/eval.tfrecord" \
        --eval_fraction="$EVAL_FRACTION" --max_seq_length="$SEQ" --max_predictions_per_seq="$PREDICTIONS" \
        --dupe_factor="$DUPE" --random_seed=12345
  fi
  if scored_at "$WORK/$rule/run" "$PRETRAIN_STEPS"; then
    echo "== $rule: pretrained ($WORK/$rule/run)"
    continue
  fi
  echo "== $rule: pretraining"
  # max_eval_steps high enough to read every full batch of the held-out records, not a sample of them; checkpoints
  # at most 5,000 steps apart, so that an interrupted long run resumes when its command is run again.
  # shellcheck disable=SC2086  # STRATEGY is several flags or none
  $PY tools/run_pretraining.py --input_file="$WORK/$rule/train.tfrecord" \
      --eval_input_file="$WORK/$rule/eval.tfrecord" --output_dir="$WORK/$rule/run" \
      --albert_config_file="$MODEL_CONFIG" --max_seq_length="$SEQ" --max_predictions_per_seq="$PREDICTIONS" \
      --train_batch_size="$PRETRAIN_BATCH" --learning_rate="$PRETRAIN_LR" --num_train_steps="$PRETRAIN_STEPS" \
      --num_warmup_steps="$PRETRAIN_WARMUP" --iterations_per_loop=100 \
      --save_checkpoints_steps=$((PRETRAIN_STEPS < 5000 ? PRETRAIN_STEPS : 5000)) \
      --do_train --do_eval --eval_batch_size=64 --max_eval_steps=1000 --random_seed=12345 \
      $STRATEGY
done

echo "== every model on the other rules' held-out records"
for model in "${RULES[@]}"; do
  for records in "${RULES[@]}"; do
    [[ $records == "$model" ]] && continue  # its own: the training run's evaluation
    # Its eval_results.txt says global_step 0 (no training step in this run): written once the evaluation is done.
    [[ -e $WORK/$model/eval_on_$records/eval_results.txt ]] && continue
    # shellcheck disable=SC2086
    $PY tools/run_pretraining.py --nodo_train --do_eval --init_checkpoint="$WORK/$model/run" \
        --input_file="$WORK/$records/eval.tfrecord" --output_dir="$WORK/$model/eval_on_$records" \
        --albert_config_file="$MODEL_CONFIG" --max_seq_length="$SEQ" --max_predictions_per_seq="$PREDICTIONS" \
        --eval_batch_size=64 --max_eval_steps=1000 $STRATEGY
  done
done

if [[ -z $KLUE_NER_DIR ]]; then
  KLUE_NER_DIR=$WORK/klue-ner-v1.1
  if [[ -e $KLUE_NER_DIR/klue-ner-v1.1_dev.tsv ]]; then
    echo "== KLUE-NER: $KLUE_NER_DIR exists"
  else
    echo "== KLUE-NER: the shared dev sentences, every 5th to dev"
    $PY - "$SHARED/klue/klue-ner-v1.1_dev.tsv" "$KLUE_NER_DIR" <<'EOF'
import os, sys
# KLUE's layout, as the tool reads it: '##' comment lines at the top, then sentences separated by blank lines (or
# a line holding a tab), each a '## <guid>\t<sentence>' header and a 'CHAR\tTAG' line per character. Both parts
# keep the comments and the sentences' lines as they are.
comments, sentences, lines = [], [], []
with open(sys.argv[1], encoding="utf-8") as f:
  for line in f.read().split("\n"):
    if line in ("", "\t"):
      if any(not l.startswith("##") for l in lines):
        sentences.append(lines)
      else:
        comments += lines
      lines = []
    elif line.startswith("##") and lines and not lines[-1].startswith("##"):
      raise SystemExit(f"a '##' line among a sentence's characters: {line!r}")
    else:
      lines.append(line)
if any(not l.startswith("##") for l in lines):
  sentences.append(lines)
# The header is the last '##' line before the characters; the '##' lines before it are the file's comments.
header_at = next(i for i, l in enumerate(sentences[0]) if not l.startswith("##")) - 1
comments += sentences[0][:header_at]
sentences[0] = sentences[0][header_at:]
os.makedirs(sys.argv[2] + ".partial", exist_ok=True)
for split, keep in (("train", lambda i: i % 5 != 4), ("dev", lambda i: i % 5 == 4)):
  part = [s for i, s in enumerate(sentences) if keep(i)]
  with open(os.path.join(sys.argv[2] + ".partial", f"klue-ner-v1.1_{split}.tsv"), "w", encoding="utf-8") as f:
    f.write("\n".join(comments + ["\n".join(s) + "\n" for s in part]))
  print(f"{split}: {len(part)} sentences, {sum(len(s) - 1 for s in part)} characters")
os.replace(sys.argv[2] + ".partial", sys.argv[2])
EOF
  fi
fi

for rule in "${RULES[@]}"; do
  for seed in $FINETUNE_SEEDS; do
    if scored_at "$WORK/$rule/ner_seed$seed" "$FINETUNE_STEPS"; then
      echo "== $rule: fine-tuned on KLUE-NER, seed $seed ($WORK/$rule/ner_seed$seed)"
      continue
    fi
    echo "== $rule: fine-tuning on KLUE-NER, seed $seed"
    # One checkpoint, at the last step, scored on dev.
    # shellcheck disable=SC2086
    $PY tools/run_token_classification.py --task_name=klue-ner --data_dir="$KLUE_NER_DIR" \
        --output_dir="$WORK/$rule/ner_seed$seed" --albert_config_file="$MODEL_CONFIG" --spm_model_file="$SPM" \
        --init_checkpoint="$WORK/$rule/run" --max_seq_length="$FINETUNE_SEQ" --doc_stride="$FINETUNE_STRIDE" \
        --train_batch_size="$FINETUNE_BATCH" --eval_batch_size=64 --learning_rate="$FINETUNE_LR" \
        --train_step="$FINETUNE_STEPS" --warmup_step=$((FINETUNE_STEPS / 10)) \
        --save_checkpoints_steps="$FINETUNE_STEPS" --iterations_per_loop=100 --random_seed="$seed" $STRATEGY
  done
done

echo "== results ($PRETRAIN_STEPS pretraining steps of $PRETRAIN_BATCH, $FINETUNE_STEPS fine-tuning steps)"
$PY - "$WORK" "$FINETUNE_SEEDS" "${RULES[@]}" <<'EOF'
import os, sys
work, seeds, rules = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
def results(*path):
  with open(os.path.join(work, *path, "eval_results.txt"), encoding="utf-8") as f:
    return dict((name, float(value)) for name, _, value in (line.strip().partition(" = ") for line in f))
print("| rule | MLM acc, own rule's held-out | MLM acc, " + " | MLM acc, ".join(f"{r}'s held-out" for r in rules)
      + " | SOP acc | KLUE-NER dev entity F1, seed " + " / ".join(seeds) + " | mean"
      + " | character F1, seed " + " / ".join(seeds) + " | mean |")
print("|---" * (len(rules) + 7) + "|")
for rule in rules:
  own = results(rule, "run")
  ner = [results(rule, f"ner_seed{seed}") for seed in seeds]
  entity, character = [r["entity_f1"] for r in ner], [r["character_f1"] for r in ner]
  print(f"| {rule} | {own['masked_lm_accuracy']:.4f} | "
        + " | ".join(f"{results(rule, 'run' if r == rule else f'eval_on_{r}')['masked_lm_accuracy']:.4f}"
                     for r in rules)
        + f" | {own['sentence_order_accuracy']:.4f} | " + " / ".join(f"{f:.4f}" for f in entity)
        + f" | {sum(entity) / len(entity):.4f} | " + " / ".join(f"{f:.4f}" for f in character)
        + f" | {sum(character) / len(character):.4f} |")
EOF
