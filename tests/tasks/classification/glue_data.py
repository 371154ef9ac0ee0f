"""GLUE's files in miniature, in their real layouts (a header first, except in CoLA's train and dev), for the
classification tests and the fine-tuning driver's."""

import pytest

from tests.conftest import write

# Some texts hold unbalanced quotes: GLUE's files are read without quoting.
MNLI_HEADER = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
               "sentence1_parse\tsentence2_parse\tsentence1\tsentence2")
MNLI_PARSES = "( x )\t( y )\t(ROOT x)\t(ROOT y)"
STSB_HEADER = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2"
STSB_ROW = "{}\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\t{}\t{}"
MRPC_COLUMNS = "#1 ID\t#2 ID\t#1 String\t#2 String"
GLUE_FILES = {
    "CoLA/train.tsv": ["gj04\t1\t\tOur friends won't buy this analysis.", "gj04\t0\t*\tThey drank the pub."],
    "CoLA/dev.tsv": ["gj04\t1\t\tThe sailors rode the breeze clear of the rocks."],
    "CoLA/test.tsv": ["index\tsentence", "0\tBill whistled past the house.", '1\tThe car honked "down.'],
    "SST-2/train.tsv": ["sentence\tlabel", "hide new secretions from the parents \t0",
                        "the greatest musicians \t1"],
    "SST-2/dev.tsv": ["sentence\tlabel", "it 's a charming journey . \t1"],
    "SST-2/test.tsv": ["index\tsentence", "0\tuneasy mishmash of styles ."],
    "MRPC/train.tsv": ["Quality\t" + MRPC_COLUMNS, '1\t702876\t702977\tHe called " the witness " .\tHe did .',
                       "0\t2108705\t2108831\tYucaipa owned it .\tYucaipa bought it ."],
    "MRPC/dev.tsv": ["Quality\t" + MRPC_COLUMNS, "1\t1355540\t1355592\tHe said .\tHe says ."],
    "MRPC/test.tsv": ["index\t" + MRPC_COLUMNS, "0\t1089874\t1089925\tPCCW 's chief .\tCEO ."],
    "STS-B/train.tsv": [STSB_HEADER + "\tscore", STSB_ROW.format(0, "A jet flies.", "A jet.") + "\t5.0",
                        STSB_ROW.format(1, "A man plays a flute.", "A man plays.") + "\t3.800"],
    "STS-B/dev.tsv": [STSB_HEADER + "\tscore", STSB_ROW.format(0, "A hard hat.", "A hat.") + "\t0.5"],
    "STS-B/test.tsv": [STSB_HEADER, STSB_ROW.format(0, "A girl sings.", "A girl talks.")],
    "QQP/train.tsv": ["id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate",
                      "133273\t213221\t213222\tHow is the life of a math student?\tWhich level is enough?\t0",
                      "402555\t536040\t536041\tHow do I control it?\tHow do you control it?\t1"],
    "QQP/dev.tsv": ["id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate",
                    "201359\t303345\t303346\tWhy is it so?\tWhy are they so good?\t0"],
    "QQP/test.tsv": ["id\tquestion1\tquestion2", "0\tWhy am I lonely?\tHow can I stop being lonely?"],
    "MNLI/train.tsv": [MNLI_HEADER + "\tlabel1\tgold_label",
                       f"0\t31193\t31193n\tgovernment\t{MNLI_PARSES}\tCream skimming has two dimensions.\t"
                       "Product makes it work. \tneutral\tneutral",
                       f'1\t101457\t101457e\ttelephone\t{MNLI_PARSES}\tyou know "during the season\t'
                       "You lose.\tentailment\tentailment"],
    "MNLI/dev_matched.tsv": [MNLI_HEADER + "\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label",
                             f"0\t63735\t63735n\tslate\t{MNLI_PARSES}\tThe rights are nice.\tEveryone likes "
                             "them.\tneutral\tentailment\tneutral\tneutral\tneutral\tneutral"],
    "MNLI/dev_mismatched.tsv": [MNLI_HEADER + "\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label"] + [
        f"{index}\t75290\t75290c\tletters\t{MNLI_PARSES}\tYes.\tNo.\t" + "\t".join(["contradiction"] * 6)
        for index in range(2)],
    "MNLI/test_matched.tsv": [MNLI_HEADER, f"0\t31349\t31349\tslate\t{MNLI_PARSES}\tHi Tom.\tTom is here."],
    "MNLI/test_mismatched.tsv": [MNLI_HEADER, f"0\t2\t2\tletters\t{MNLI_PARSES}\tHello.\tA greeting."],
    "QNLI/train.tsv": ["index\tquestion\tsentence\tlabel",
                       "0\tWhen did the third series begin?\tUnlike the two before it.\tnot_entailment"],
    "QNLI/dev.tsv": ["index\tquestion\tsentence\tlabel", "0\tWhat came into force?\tThe Treaty.\tentailment"],
    "QNLI/test.tsv": ["index\tquestion\tsentence", "0\tWho is devoted to it?\tFor decades."],
    "RTE/train.tsv": ["index\tsentence1\tsentence2\tlabel", "0\tNo Weapons Yet.\tWeapons.\tnot_entailment",
                      "1\tA place of sorrow.\tPope buried.\tentailment"],
    "RTE/dev.tsv": ["index\tsentence1\tsentence2\tlabel", "0\tDana Reeve died.\tReeve had.\tnot_entailment"],
    "RTE/test.tsv": ["index\tsentence1\tsentence2", "0\tMexico City has a population.\tMexico is big."],
    "WNLI/train.tsv": ["index\tsentence1\tsentence2\tlabel", "0\tI stuck a pin in it.\tIt had a hole.\t1"],
    "WNLI/dev.tsv": ["index\tsentence1\tsentence2\tlabel", "0\tThe drain is clogged.\tThe hair is.\t0"],
    "WNLI/test.tsv": ["index\tsentence1\tsentence2", "0\tMaude had seen trains.\tThe trains roared."],
}


def write_glue_data(root):
  """A GLUE download in miniature under `root`: every task's folder and files, a few rows each."""
  for name, lines in GLUE_FILES.items():
    write(root / "glue_data" / name, lines)
  return root / "glue_data"


@pytest.fixture
def glue_dir(tmp_path):
  """`write_glue_data` in the test's own directory."""
  return write_glue_data(tmp_path)
