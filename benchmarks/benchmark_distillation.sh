#!/usr/bin/env bash
# Cross-lingual distillation on real parallel text (../shared/parallel/en_ko_messages.tsv), end to end with the
# tools, and the figures it reaches: translation retrieval of the student before and after distillation.
#
#   benchmarks/benchmark_distillation.sh [work_dir]      (about 40 minutes on 2 CPU cores)
#   DISTILL_STEPS=1000 benchmarks/benchmark_distillation.sh   (a shorter distillation)
#
# Teacher: albert_tiny pretrained (MLM + SOP) on the shared English corpora with an English vocabulary, mean
# pooling, exported as a SavedModel. Student: albert_tiny with the shared English+Korean vocabulary
# (sp8k_en_ko), pretrained the same way on the Korean and English corpora, then distilled: its embeddings of
# each English message and of its Korean translation regress the teacher's embedding of the English one.
# 1,000 pairs (seed 12345) are held out; retrieval is top-1 among them, both directions.
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${1:-/tmp/albert_distillation_benchmark}
PY=${PYTHON:-.venv/bin/python}
SHARED=../shared
CORPUS=$SHARED/corpus
STEPS=${PRETRAIN_STEPS:-2000}
rm -rf "$WORK" && mkdir -p "$WORK"

pretrain() {  # name, spm model, corpus files (comma-separated)
  local name=$1 spm=$2 files=$3
  $PY tools/create_pretraining_data.py --input_file="$files" --output_file="$WORK/$name/train.tfrecord" \
      --spm_model_file="$spm" --max_seq_length=64 --max_predictions_per_seq=10 --dupe_factor=3 --num_workers=2
  $PY tools/run_pretraining.py --input_file="$WORK/$name/train.tfrecord" --output_dir="$WORK/$name/run" \
      --albert_config_file=configs/albert_tiny.json --max_seq_length=64 --max_predictions_per_seq=10 \
      --train_batch_size=32 --num_train_steps="$STEPS" --num_warmup_steps=200 --save_checkpoints_steps="$STEPS" \
      --iterations_per_loop=200
}

echo "== teacher: English vocabulary and pretraining"
$PY tools/train_sentencepiece.py --input="$CORPUS/en_wiki.txt,$CORPUS/en_botchan.txt" \
    --model_prefix="$WORK/teacher/spiece" --vocab_size=8000
pretrain teacher "$WORK/teacher/spiece.model" "$CORPUS/en_wiki.txt,$CORPUS/en_botchan.txt"
$PY tools/export_saved_model.py --albert_config_file=configs/albert_tiny.json --checkpoint="$WORK/teacher/run" \
    --spm_model_file="$WORK/teacher/spiece.model" --max_seq_length=64 --export_dir="$WORK/teacher/export"

echo "== student: English+Korean vocabulary and pretraining"
pretrain student "$SHARED/reference/sp8k_en_ko.model" \
    "$CORPUS/en_wiki.txt,$CORPUS/en_botchan.txt,$CORPUS/ko_law.txt,$CORPUS/ko_libreoffice_help.txt"

common=(--parallel_file="$SHARED/parallel/en_ko_messages.tsv" --teacher="$WORK/teacher/export/1"
        --albert_config_file=configs/albert_tiny.json --spm_model_file="$SHARED/reference/sp8k_en_ko.model"
        --init_checkpoint="$WORK/student/run" --max_seq_length=64 --parallel_dev_size=1000 --eval_batch_size=64
        --pooling=mean)
echo "== the student before distillation"
$PY tools/train_sentence_encoder.py "${common[@]}" --output_dir="$WORK/before" --do_eval
echo "== distillation"
$PY tools/train_sentence_encoder.py "${common[@]}" --output_dir="$WORK/distilled" --do_train --do_eval \
    --train_batch_size=32 --learning_rate=5e-4 --train_step=${DISTILL_STEPS:-4000} --warmup_step=100 \
    --save_checkpoints_steps=$(( ${DISTILL_STEPS:-4000} / 8 )) --iterations_per_loop=50

echo "== figures (dev: 1,000 held-out pairs)"
echo "-- before distillation"
grep -E "^(retrieval_accuracy|retrieval_source_to_translation|retrieval_translation_to_source|mse) " \
    "$WORK/before/eval_results.txt"
echo "-- distilled, the best checkpoint"
cat "$WORK/distilled/best_checkpoint.json"; echo
