"""`create_pretraining_data` as an Apache Beam pipeline, for corpora beyond one machine (Dataflow, Flink,
Spark, or the DirectRunner locally).

It computes what the local engine (`pretraining_writer`) computes, with the same seeds and record order
(`pretraining_corpus`), so the same inputs and flags give the same bytes in every shard. Where the local
engine uses files on disk, the pipeline uses Beam's shuffles:

1. each input file is read whole by one worker (a document never splits across workers), which numbers its
   documents per split; the documents' global indices come from the per-file counts (a side input);
2. documents are tokenized, then planned for every pass; a pair whose segment B comes from another document
   is joined with that document (`CoGroupByKey` on its index) and finished there, the others at once;
3. records are grouped into buckets of shuffle-key ranges; each bucket is sorted in a worker's memory, its
   records' global ranks follow from the per-bucket counts (a side input), and each bucket writes its part of
   every shard; finally each shard's parts are concatenated in bucket order (TFRecord files concatenate).

Shards are written as hidden partial files and renamed into place by the launching process only after the
pipeline succeeded. The memory budget sets how many buckets there are: one bucket is held by one worker.
"""

from typing import Dict, Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from albert_tf.data import beam_support
from albert_tf.data import pretraining_corpus
from albert_tf.data.instances import InstanceOptions, random_segment_tokens
from albert_tf.data.pretraining_corpus import EVAL, TRAIN, DataSummary, TokenizerSpec
from albert_tf.errors import CorpusError
from albert_tf.files import file_size, partial_path

class _ReadDocuments(beam.DoFn):
  """A whole input file → its documents as (split, file index, index among the file's documents of that split,
  lines), then, tagged "counts", ((split, file index), number of documents)."""

  def __init__(self, random_seed: int, eval_fraction: float):
    self._seed = random_seed
    self._eval_fraction = eval_fraction

  def process(self, element):
    file_index, path = element
    counts = {TRAIN: 0, EVAL: 0}
    for index_in_file, lines in enumerate(pretraining_corpus.read_documents(path)):
      split = EVAL if pretraining_corpus.is_held_out(self._seed, file_index, index_in_file,
                                                     self._eval_fraction) else TRAIN
      yield split, file_index, counts[split], lines
      counts[split] += 1
    for split, count in counts.items():
      beam_support.count(f"{split}.documents", count)
      yield beam.pvalue.TaggedOutput("counts", ((split, file_index), count))


class _NumberDocuments(beam.DoFn):
  """(split, file index, index in file, lines) → ((split, index among the split's documents), lines)."""

  def __init__(self):
    self._first_index = None

  def process(self, document, file_counts: Dict):
    if self._first_index is None:
      # Where each file's documents start in its split's numbering: the counts of the files before it.
      self._first_index, totals = {}, {TRAIN: 0, EVAL: 0}
      for split, file_index in sorted(file_counts):
        self._first_index[split, file_index] = totals[split]
        totals[split] += file_counts[split, file_index]
    split, file_index, index_in_file, lines = document
    yield (split, self._first_index[split, file_index] + index_in_file), lines


class _WithMaker(beam.DoFn):
  """A DoFn that builds the tokenizer and `InstanceMaker` once per worker, from the model's bytes (workers of a
  distributed runner cannot read the launching machine's files)."""

  def __init__(self, model_bytes: bytes, tokenizer_spec: TokenizerSpec, options: InstanceOptions,
               random_seed: int):
    self._model_bytes = model_bytes
    self._tokenizer_options = tokenizer_spec
    self._options = options
    self._seed = random_seed
    self.maker = None

  def setup(self):
    self.maker = pretraining_corpus.instance_maker(self._tokenizer_options, self._model_bytes, self._options,
                                                   self._seed)

  def finished(self, split: str, pass_index: int, document_index: int, pair_index: int, pair, tokens_b):
    summary = DataSummary()
    entry = self.maker.finish(split, pass_index, document_index, pair_index, pair, tokens_b, summary)
    for field in DataSummary.COUNTS:
      beam_support.count(f"{split}.{field}", getattr(summary, field))
    return [] if entry is None else [(split, entry)]


class _Tokenize(_WithMaker):

  def process(self, element):
    key, lines = element
    yield key, self.maker.tokenize(lines)


class _PlanPairs(_WithMaker):
  """A tokenized document → its finished records of every pass, and, tagged "requests", the pairs whose
  segment B must be read from another document, keyed by that document."""

  def __init__(self, *args, dupe_factor: int):
    super().__init__(*args)
    self._dupe_factor = dupe_factor

  def process(self, element, num_documents: Dict):
    (split, document_index), document = element
    for pass_index in range(self._dupe_factor):
      pairs = self.maker.plan(split, pass_index, document_index, document, num_documents[split])
      for pair_index, pair in enumerate(pairs):
        if pair.random_segment is None:
          yield from self.finished(split, pass_index, document_index, pair_index, pair, pair.tokens_b)
        else:
          yield beam.pvalue.TaggedOutput("requests", ((split, pair.random_segment.document_index),
                                                      (pass_index, document_index, pair_index, pair)))


class _FinishRandomSegments(_WithMaker):
  """A document joined with the pairs that take their segment B from it → those pairs' records."""

  def process(self, element):
    (split, _), joined = element
    documents = list(joined["document"])
    document = documents[0] if documents else []
    for pass_index, document_index, pair_index, pair in joined["requests"]:
      yield from self.finished(split, pass_index, document_index, pair_index, pair,
                               random_segment_tokens(document, pair.random_segment))


class _WriteBucketParts(beam.DoFn):
  """One bucket of a split, sorted → its records written to one part file per shard, in rank order; emits
  ((split, shard), (bucket, part file))."""

  def __init__(self, work_dir: str, num_shards: Dict[str, int]):
    self._work_dir = work_dir
    self._num_shards = num_shards

  def process(self, element, bucket_counts: Dict):
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    (split, bucket), entries = element
    entries = sorted(entries, key=lambda entry: entry[:4])
    first_rank = sum(count for (count_split, index), count in bucket_counts.items()
                     if count_split == split and index < bucket)
    num_shards = self._num_shards[split]
    for shard in range(num_shards):
      # The records of this shard: global ranks ≡ shard (mod num_shards).
      start = (shard - first_rank) % num_shards
      if start >= len(entries):
        continue
      path = f"{self._work_dir}/{split}-{shard:05d}-{bucket:05d}.tfrecord"
      with tf.io.TFRecordWriter(path) as writer:
        for entry in entries[start::num_shards]:
          writer.write(entry.record)
      yield (split, shard), (bucket, path)


def create_pretraining_data_beam(input_files: Sequence[str], output_files: Sequence[str],
                                 tokenizer_spec: TokenizerSpec, options: InstanceOptions,
                                 dupe_factor: int = 40, random_seed: int = 12345,
                                 eval_output_files: Sequence[str] = (), eval_fraction: float = 0.0,
                                 memory_bytes: int = 1 << 30,
                                 pipeline_args: Sequence[str] = ("--runner=DirectRunner",),
                                 overwrite: bool = False) -> Dict[str, DataSummary]:
  """Writes the records `pretraining_writer.create_pretraining_data` writes, with an Apache Beam pipeline.

  Args:
    input_files, output_files, tokenizer_spec, options, dupe_factor, random_seed, eval_output_files,
      eval_fraction, overwrite: as for `pretraining_writer.create_pretraining_data`; paths may be local or
      gs:// (every worker must reach them).
    memory_bytes: about the most bytes of records one worker holds: one shuffle bucket.
    pipeline_args: Beam's pipeline options, e.g. ["--runner=DataflowRunner", "--project=...", ...].

  Returns:
    The `DataSummary` of each split, from the pipeline's counters.

  Raises:
    As `create_pretraining_data`; a worker's DataError (non-UTF-8 input, naming file and line) is raised here.
  """
  model_bytes = pretraining_corpus.check_run(input_files, output_files, eval_output_files, eval_fraction,
                                             dupe_factor, tokenizer_spec, overwrite, options.word_boundaries)
  shards = {TRAIN: list(output_files), EVAL: list(eval_output_files)}
  splits = [split for split in (TRAIN, EVAL) if shards[split]]
  partials = {split: [partial_path(path) for path in shards[split]] for split in splits}
  maker_args = (model_bytes, tokenizer_spec, options, random_seed)
  input_bytes = sum(file_size(path) for path in input_files)
  # Buckets: ranges of shuffle keys small enough for one worker's memory (about 2 bytes of text a token).
  bits = pretraining_corpus.bucket_bits(
      pretraining_corpus.estimated_record_bytes(input_bytes // 2, dupe_factor, options), memory_bytes,
      max_bits=16)

  with beam_support.pipeline_run([path for split in splits for path in shards[split]],
                                 [path for paths in partials.values() for path in paths], (CorpusError,)) as work_dir:
    with beam.Pipeline(options=PipelineOptions(list(pipeline_args))) as pipeline:
      read = (pipeline
              | "InputFiles" >> beam.Create(list(enumerate(input_files)))
              | "ReadDocuments" >> beam.ParDo(_ReadDocuments(random_seed, eval_fraction)).with_outputs(
                  "counts", main="documents"))
      file_counts = beam.pvalue.AsDict(read.counts)
      split_totals = beam.pvalue.AsDict(
          read.counts | "SplitOf" >> beam.Map(lambda kv: (kv[0][0], kv[1])) | "PerSplit" >> beam.CombinePerKey(sum))
      tokenized = (read.documents
                   | "Number" >> beam.ParDo(_NumberDocuments(), file_counts)
                   | "Spread" >> beam.Reshuffle()
                   | "Tokenize" >> beam.ParDo(_Tokenize(*maker_args)))
      planned = tokenized | "Plan" >> beam.ParDo(_PlanPairs(*maker_args, dupe_factor=dupe_factor),
                                                 split_totals).with_outputs("requests", main="records")
      joined = ({"document": tokenized, "requests": planned.requests}
                | "JoinRandomSegments" >> beam.CoGroupByKey()
                | "FinishRandomSegments" >> beam.ParDo(_FinishRandomSegments(*maker_args)))
      bucketed = ((planned.records, joined)
                  | "AllRecords" >> beam.Flatten()
                  | "Bucket" >> beam.Map(lambda kv: ((kv[0], pretraining_corpus.bucket_of(kv[1].key, bits)), kv[1])))
      bucket_counts = beam.pvalue.AsDict(bucketed | "CountBuckets" >> beam.combiners.Count.PerKey())
      _ = (bucketed
           | "GroupBuckets" >> beam.GroupByKey()
           | "WriteBucketParts" >> beam.ParDo(_WriteBucketParts(work_dir, {s: len(shards[s]) for s in splits}),
                                              bucket_counts)
           | "GroupShards" >> beam.GroupByKey()
           | "ConcatenateParts" >> beam.ParDo(beam_support.ConcatenateParts(
               {(split, shard): path for split in splits for shard, path in enumerate(partials[split])})))
    counters = beam_support.counter_totals(pipeline.result)
    summaries = {}
    for split in splits:
      summary = DataSummary(output_files=shards[split], dynamic_masking=options.dynamic_masking)
      for field in DataSummary.COUNTS + ("documents",):
        setattr(summary, field, counters.get(f"{split}.{field}", 0))
      if not summary.documents:
        raise CorpusError(f"No text in {', '.join(input_files)}: the corpus is empty (or only blank lines)."
                          if split == TRAIN else f"No document was held out with --eval_fraction={eval_fraction}.")
      if not summary.instances:
        raise CorpusError(f"No {split} instance could be made from {', '.join(input_files)} with these flags.")
      summaries[split] = summary
    pretraining_corpus.move_into_place([(partial, path) for split in splits
                                        for partial, path in zip(partials[split], shards[split])])
  return summaries
