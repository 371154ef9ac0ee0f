"""albert-tf: ALBERT (A Lite BERT) in TensorFlow 2 / tf_keras."""

import setuptools

# tools/*.py (Google's script names, run from a checkout) are installed as the package albert_tf_tools, and
# each as the command albert-<name> (albert-run-pretraining, ...). benchmarks/ is not installed: its scripts
# measure the project, and are run from a checkout.
TOOLS = ("prepare_corpus", "create_pretraining_data", "run_pretraining", "run_classifier", "run_squad_v1",
         "run_squad_v2", "run_race", "train_sentence_encoder", "train_sentencepiece", "vocab_report", "extend_vocab",
         "evaluate_sts", "convert_checkpoint", "export_hf", "export_saved_model", "export_tfhub", "export_onnx",
         "run_token_classification", "run_dependency_parsing",
         "run_dialogue_state_tracking", "run_klue")

# Apache Beam, for create_pretraining_data --runner (Dataflow, Flink, Spark, the DirectRunner); [gcp] for
# Dataflow and gs://.
BEAM = ["apache-beam[gcp]"]
# The Korean analyzers, each with its model or dictionary from the package index: Kiwi (prepare_corpus's Korean
# sentences, train_sentencepiece --pretokenizer=kiwi, vocab_report) and MeCab-ko (--pretokenizer=mecab).
# Pinned to a minor release: another Kiwi model splits and analyses differently, and the outputs should not
# change under a user.
KOREAN = ["kiwipiepy~=0.24.1", "mecab-ko~=1.0.3"]
# export_onnx: tf2onnx converts a SavedModel (pinned: the ONNX graph is its conversion, and it reaches into
# TensorFlow's internals), ONNX Runtime checks the result against the SavedModel, tokenizers checks the tokenizer
# files. tf2onnx brings onnx.
ONNX = ["tf2onnx==1.17.0", "onnxruntime", "tokenizers"]

setuptools.setup(
    name="albert-tf",
    version="0.1.0",
    description="ALBERT pretraining, fine-tuning and export in TensorFlow 2 (tf_keras), "
                "faithful to google-research/albert and Hugging Face transformers.",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=setuptools.find_packages(include=["albert_tf", "albert_tf.*"]) + ["albert_tf_tools"],
    package_dir={"albert_tf_tools": "tools"},
    package_data={"albert_tf": ["sample_data/*"]},
    entry_points={"console_scripts": [f"albert-{name.replace('_', '-')} = albert_tf_tools.{name}:run" for name in TOOLS]
                  + ["albert-demo = albert_tf.cli.demo:run"]},
    install_requires=[
        # tf-models-official 2.20 pins TF 2.20 and tensorflow-text 2.20; keep the four in step.
        "tensorflow~=2.20.0",
        "tensorflow-text~=2.20.0",
        "tf-models-official==2.20.0",
        "tf-keras~=2.20.0",
        # 0.2.3's generated protobuf code needs protobuf >= 7.36, which Apache Beam (the [beam] extra, and the
        # images of Beam's workers) refuses; 0.2.2 gives the same ids.
        "sentencepiece<0.2.3",
        "absl-py",
        "numpy",
        # prepare_corpus's sentence splitter for languages other than Korean (pure Python, ~300 languages).
        "sentencex~=1.0.32",
        # tensorflow-hub (the Model Garden's; hub.KerasLayer loads our TF Hub exports) imports pkg_resources,
        # which setuptools 81 removed.
        "setuptools<81",
    ],
    extras_require={
        "beam": BEAM,
        "korean": KOREAN,
        "onnx": ONNX,
        # scikit-learn, SciPy and seqeval: the metrics are checked against them. pytest-xdist: the suite runs on
        # 2 cores. sentence-transformers: exported sentence encoders are loaded with it. The optional extras too,
        # so that none of their tests can skip (ONNX Runtime also serves the ONNX exports in benchmarks/benchmark_serving.py).
        "test": ["pytest", "pytest-xdist", "transformers", "torch==2.13.0", "safetensors", "scikit-learn",
                 "scipy", "seqeval", "sentence-transformers~=6.2"] + BEAM + KOREAN + ONNX,
    },
    classifiers=[
        "Programming Language :: Python :: 3",
        "License :: OSI Approved :: Apache Software License",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
