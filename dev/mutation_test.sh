#!/usr/bin/env bash
# Mutation testing of albert_tf with mutmut 3. A developer tool: NOT part of CI.
#
#   dev/mutation_test.sh                          # every group: well over an hour on 2 cores
#   dev/mutation_test.sh optimization training    # named groups (9 and 14 min; list in group() below)
#
# Each group mutates some modules (or only some functions of them), and mutmut runs every mutant against
# only the tests that call the mutated function. It all happens in a scratch copy of the working tree in
# $TMPDIR, deleted afterwards. The repository gets only mutation_results/<group>.txt: the counts, the kill
# rate, and every mutant that no test killed, with its diff.
#
# mutmut runs its mutants in a fork server that imports albert_tf (and so TensorFlow) but runs no op and
# collects no test before it forks. TensorFlow's thread pools do not survive a fork: mutmut's default,
# forking from the process that ran the tests, or a fork server that collects the tests first (test
# modules make tf.distribute strategies), leave every mutant hanging until its timeout.
#
# Environment: MUTMUT (default .venv/bin/mutmut), JOBS (mutants at a time, default: the number of cores).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
mutmut=${MUTMUT:-$repo/.venv/bin/mutmut}
jobs=${JOBS:-$(nproc)}
results=$repo/mutation_results
all_groups=(instances losses optimization training input_pipeline routing tokenization)

# Sets, for group $1: files (to mutate), mutants (mutant-name globs: module.x_function or
# module.xǁClassǁmethod, each followed by __mutmut_N) and tests (pytest arguments). Tests that run a tool
# in a subprocess are left out: the subprocess imports the unmutated package, so they cannot kill anything.
group() {
  case $1 in
    instances)  # masking and sentence-order pairs, their seeds, the shuffle. The Google-statistics tests (a
      # minute each) are left out.
      files=(albert_tf/data/instances.py albert_tf/data/pretraining_corpus.py albert_tf/data/external_shuffle.py
             albert_tf/data/token_store.py)
      mutants=("albert_tf.data.instances.*" "albert_tf.data.pretraining_corpus.*" "albert_tf.data.external_shuffle.*"
               "albert_tf.data.token_store.*")
      local slow="statistics_match_google or tool or memory or interrupted or killed or full_disk or read_together"
      tests=(tests/data/test_pretraining_writer.py tests/data/test_data_mixing.py -k "not ($slow)") ;;
    losses)  # loss and metric reductions
      files=(albert_tf/training/pretraining_objective.py albert_tf/training/metrics.py
             albert_tf/training/finetuning_objectives.py)
      local objectives=albert_tf.training.finetuning_objectives
      mutants=("albert_tf.training.metrics.*" "albert_tf.training.pretraining_objective.*"
               "$objectives.x__safe_ratio__*" "$objectives.x*Objective*"{_per_example,replica_loss,metrics_from_sums}"__*")
      tests=(tests/training/test_metrics.py tests/training/test_pretraining.py::test_loss_is_googles_formula
             tests/training/test_pretraining.py::test_replica_loss_is_a_share_of_the_global_batch_loss_and_metrics_are_ratios
             tests/training/test_finetuning.py::test_losses_and_metrics_are_googles
             tests/training/test_finetuning.py::test_sentence_similarity_loss_fits_cosines_to_scaled_scores) ;;
    optimization)
      files=(albert_tf/training/optimization.py)
      mutants=("albert_tf.training.optimization.*")
      tests=(tests/training/test_optimization.py) ;;
    training)  # checkpoints, the best checkpoint, resuming, the loop schedule, gradient clipping
      files=(albert_tf/modeling/checkpoints.py albert_tf/training/run_directory.py albert_tf/training/loop.py)
      mutants=("albert_tf.modeling.checkpoints.*"
               albert_tf.training.run_directory.x_{keep_if_best,read_best_info,last_evaluated_step}"__*"
               albert_tf.training.run_directory.x_{awaits_evaluation,restore_latest,check_run_directory}"__*"
               "albert_tf.training.loop.x_replica_train_step__*" "albert_tf.training.loop.x*LoopSchedule*")
      tests=(tests/modeling/test_checkpoint.py tests/training/test_training.py tests/interop/test_conversion.py -k "not tool") ;;
    input_pipeline)  # where a resumed pretraining or fine-tuning stream starts
      files=(albert_tf/data/pretraining_dataset.py albert_tf/data/record_files.py albert_tf/data/input_streams.py
             albert_tf/data/finetuning_dataset.py)
      mutants=("albert_tf.data.pretraining_dataset.*" "albert_tf.data.record_files.*" "albert_tf.data.input_streams.*"
               "albert_tf.data.finetuning_dataset.x_training_dataset__*")
      tests=(tests/data/test_pretraining_dataset.py
             tests/training/test_finetuning.py::test_training_stream_is_a_permutation_per_epoch_and_resumes_anywhere) ;;
    routing)  # which group's blocks each layer runs. The 20-second v2 parameter counts are left out.
      files=(albert_tf/modeling/encoder.py albert_tf/modeling/config.py)
      mutants=("albert_tf.modeling.encoder.*" "albert_tf.modeling.config.x*group_of_layer__*")
      tests=(tests/modeling/test_model.py tests/modeling/test_config.py
             tests/interop/test_huggingface_export.py::test_hugging_face_outputs_equal_ours -k "not parameter_counts") ;;
    tokenization)  # text preprocessing, in Python and in the graph (the SavedModel tests are left out)
      files=(albert_tf/text/tokenizer.py albert_tf/text/graph_tokenizer.py)
      mutants=("albert_tf.text.tokenizer.*" "albert_tf.text.graph_tokenizer.*")
      tests=(tests/text/test_tokenization.py
             tests/serving/test_serving.py::test_whitespace_pattern_is_exactly_what_str_split_splits_on
             tests/serving/test_serving.py::test_graph_tokenizer_gives_the_python_ids_on_korean_and_english
             tests/serving/test_serving.py::test_packing_truncates_pairs_as_google_does) ;;
    *) echo "unknown group '$1' (groups: ${all_groups[*]})" >&2; return 1 ;;
  esac
}

# Runs group $1 in the scratch copy $2 and writes its report to stdout.
run_group() {
  local name=$1 work=$2/$1 start=$SECONDS line mutant status
  group "$name"
  mkdir -p "$work"
  cp -r "$repo"/{albert_tf,configs,tests,tools} "$work"
  ln -s "$(dirname "$repo")/shared" "$work/shared"  # conftest finds the corpora beside the repository
  {
    printf '[mutmut]\nsource_paths = albert_tf\nalso_copy =\n    configs\n    tools\n'
    printf 'process_isolation = forkserver\nforkserver_warmup = import\npreload_modules_file = preload.txt\n'
    printf 'only_mutate =\n'; printf '    %s\n' "${files[@]}"
    printf 'pytest_add_cli_args_test_selection =\n'; printf '    %s\n' "${tests[@]}"
  } >> "$work/setup.cfg"
  echo albert_tf > "$work/preload.txt"
  cd "$work"
  if ! "$mutmut" run --max-children "$jobs" "${mutants[@]}" > mutmut.log 2>&1; then
    tr '\r' '\n' < mutmut.log | tail -40; echo "== $name: mutmut failed"; return 1
  fi
  declare -A count=()
  local survivors=()
  while IFS= read -r line; do
    mutant=${line%%: *}; mutant=${mutant##* }; status=${line##*: }
    for glob in "${mutants[@]}"; do
      if [[ $mutant == $glob ]]; then
        count[$status]=$(( ${count[$status]:-0} + 1 ))
        [[ $status == killed || $status == timeout ]] || survivors+=("$mutant")
        break
      fi
    done
  done < <("$mutmut" results --all true)
  local total=0 other=""
  for status in "${!count[@]}"; do
    total=$((total + count[$status]))
    [[ $status =~ ^(killed|survived|timeout)$ ]] || other+=", ${count[$status]} $status"
  done
  local killed=${count[killed]:-0} timeout=${count[timeout]:-0}
  echo "== $name: $total mutants, $killed killed, ${count[survived]:-0} survived, $timeout timeout$other;" \
       "kill rate $(( total ? 100 * (killed + timeout) / total : 0 ))%;" \
       "$(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s"
  for mutant in "${survivors[@]}"; do echo; "$mutmut" show "$mutant"; done
}

[[ -x $mutmut ]] || { echo "mutmut not found at $mutmut: run .venv/bin/pip install mutmut==3.8.1" >&2; exit 2; }
groups=("${@:-${all_groups[@]}}")
for name in "${groups[@]}"; do group "$name"; done  # fail on a misspelt group before running anything
scratch=$(mktemp -d "${TMPDIR:-/tmp}/albert-mutation.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$results"
failed=0
for name in "${groups[@]}"; do
  echo "== $name: running (progress: $scratch/$name/mutmut.log)"
  (run_group "$name" "$scratch") 2>&1 | tee "$results/$name.txt" || failed=1
done
echo "Reports, with every surviving mutant's diff: $results/"
exit "$failed"
