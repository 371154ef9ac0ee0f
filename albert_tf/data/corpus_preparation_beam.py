"""`prepare_corpus` as an Apache Beam pipeline (Dataflow, Flink, Spark, or the DirectRunner locally): the same
documents in the same shards as the local engine (`corpus_preparation`), byte for byte.

1. each input file is read by one worker, which numbers its raw documents; they are spread over the workers,
   cleaned, split and filtered there;
2. documents are grouped by their digest: of equal documents only the first in corpus order (file, then
   position) is kept;
3. the documents kept are grouped per input file and sorted; their global ranks follow from the per-file counts
   (a side input), and each file writes its part of every shard (rank k to shard k mod the number of shards);
   each shard's parts are concatenated in file order into its partial file, renamed into place by the
   launching process only after the pipeline succeeded.

One worker holds the documents kept from one input file in step 3: split a corpus into files of a few hundred
MB, as crawls come.
"""

from typing import Dict, Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from albert_tf import files
from albert_tf.data import beam_support
from albert_tf.data import corpus_preparation
from albert_tf.data import pretraining_corpus
from albert_tf.data.corpus_preparation import PreparationOptions, PreparationSummary
from albert_tf.errors import CorpusError
from albert_tf.text.sentence_splitting import SentenceSplitter


class _ReadRawDocuments(beam.DoFn):
  """(file index, path) → ((file index, document index), paragraphs) for each raw document of the file."""

  def __init__(self, options: PreparationOptions):
    self._options = options

  def process(self, element):
    file_index, path = element
    for document_index, paragraphs in enumerate(corpus_preparation.read_raw_documents(path, self._options)):
      beam_support.count("documents_read")
      yield (file_index, document_index), paragraphs


class _SplitDocuments(beam.DoFn):
  """((file, index), paragraphs) → (digest, ((file, index), sentences)) for a document kept; counts the others."""

  def __init__(self, options: PreparationOptions):
    self._options = options
    self._splitter = None

  def setup(self):
    self._splitter = SentenceSplitter(self._options.language)

  def process(self, element):
    position, paragraphs = element
    sentences, dropped = corpus_preparation.split_document(self._splitter, paragraphs, self._options)
    if dropped is not None:
      beam_support.count(dropped)
      return
    yield corpus_preparation.document_digest(sentences), (position, sentences)


def _first_of_equals(element):
  """(digest, documents) → (file, (index, sentences)) of the first of them in corpus order."""
  _, documents = element
  documents = sorted(documents)
  beam_support.count(corpus_preparation.DUPLICATES, len(documents) - 1)
  (file_index, document_index), sentences = documents[0]
  yield file_index, (document_index, sentences)


class _WriteFileParts(beam.DoFn):
  """(file, its documents kept) → the file's part of each shard; emits (shard, (file, part file))."""

  def __init__(self, work_dir: str, num_shards: int):
    self._work_dir = work_dir
    self._num_shards = num_shards

  def process(self, element, kept_per_file: Dict[int, int]):
    file_index, documents = element
    documents = sorted(documents)
    first_rank = sum(count for index, count in kept_per_file.items() if index < file_index)
    for shard in range(self._num_shards):
      # The documents of this shard: global ranks ≡ shard (mod num_shards).
      start = (shard - first_rank) % self._num_shards
      if start >= len(documents):
        continue
      path = f"{self._work_dir}/{shard:05d}-{file_index:05d}.txt"
      with files.open_file(path, "wb") as writer:
        for _, sentences in documents[start::self._num_shards]:
          writer.write(corpus_preparation.document_text(sentences).encode("utf-8"))
          beam_support.count("documents_written")
          beam_support.count("sentences", len(sentences))
          beam_support.count("characters", sum(map(len, sentences)))
      yield shard, (file_index, path)


def prepare_corpus_beam(input_files: Sequence[str], output_files: Sequence[str], options: PreparationOptions,
                        pipeline_args: Sequence[str] = ("--runner=DirectRunner",),
                        overwrite: bool = False) -> PreparationSummary:
  """Writes what `corpus_preparation.prepare_corpus` writes, with an Apache Beam pipeline.

  Args:
    input_files, output_files, options, overwrite: as for `prepare_corpus`; paths may be local or gs:// (every
      worker must reach them).
    pipeline_args: Beam's pipeline options, e.g. ["--runner=DataflowRunner", "--project=...", ...].

  Returns:
    The run's counts, from the pipeline's counters.

  Raises:
    As `prepare_corpus`; a worker's error (non-UTF-8 input, a bad JSON line, naming file and line) is raised
    here.
  """
  corpus_preparation.check_preparation(input_files, output_files, options, overwrite)
  partials = [files.partial_path(path) for path in output_files]
  with beam_support.pipeline_run(output_files, partials, (CorpusError,)) as work_dir:
    with beam.Pipeline(options=PipelineOptions(list(pipeline_args))) as pipeline:
      kept = (pipeline
              | "InputFiles" >> beam.Create(list(enumerate(input_files)))
              | "ReadRawDocuments" >> beam.ParDo(_ReadRawDocuments(options))
              | "Spread" >> beam.Reshuffle()
              | "SplitDocuments" >> beam.ParDo(_SplitDocuments(options))
              | "GroupEquals" >> beam.GroupByKey()
              | "FirstOfEquals" >> beam.FlatMap(_first_of_equals)
              | "GroupFiles" >> beam.GroupByKey())
      kept_per_file = beam.pvalue.AsDict(kept | "CountKept" >> beam.MapTuple(lambda index, docs: (index, len(docs))))
      _ = (kept
           | "WriteFileParts" >> beam.ParDo(_WriteFileParts(work_dir, len(output_files)), kept_per_file)
           | "GroupShards" >> beam.GroupByKey()
           | "ConcatenateParts" >> beam.ParDo(beam_support.ConcatenateParts(dict(enumerate(partials)))))
    counters = beam_support.counter_totals(pipeline.result)
    summary = PreparationSummary(output_files=list(output_files))
    for field in PreparationSummary.COUNTS:
      setattr(summary, field, counters.get(field, 0))
    if not summary.documents_written:
      raise corpus_preparation.empty_result_error(input_files, summary)
    pretraining_corpus.move_into_place(list(zip(partials, output_files)))
  return summary
