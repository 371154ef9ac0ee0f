"""Korean reading comprehension data in KorQuAD 1.0's, 2.x's and KLUE-MRC's official layouts."""

import json
import random
import re

from tests.conftest import corpus_lines

# Korean reading comprehension in KorQuAD 1.0's and KLUE-MRC's official layouts (test_korquad.py,
# test_klue_mrc.py). Contexts are one to three real sentences of ko_law.txt and ko_libreoffice_help.txt; a question
# asks what one of them writes in parentheses, so the answer is a real span of a real Korean sentence whose place a
# small model can learn. KLUE-MRC's unanswerable questions are about contexts without parentheses.
KOREAN_PARENTHESES = re.compile(r"\(([^()]{2,30})\)")
KOREAN_QUESTIONS = ("괄호 안에 무엇이 쓰여 있습니까?", "괄호 속에 적힌 말은 무엇인가요?")


def korean_reading_pools(split):
  """Unique real Korean sentences (20 to 150 characters) with exactly one parenthesised group, and without any:
  every fourth for "dev", the others for "train", so that dev questions are about sentences training never saw."""
  lines = sorted({line for name in ("ko_law.txt", "ko_libreoffice_help.txt") for line in corpus_lines(name)
                  if 20 <= len(line) < 150})
  lines = [line for index, line in enumerate(lines) if (index % 4 == 0) == (split == "dev")]
  with_group = [line for line in lines if line.count("(") == line.count(")") == 1 and KOREAN_PARENTHESES.search(line)]
  return with_group, [line for line in lines if "(" not in line and ")" not in line]


def _korean_paragraph(rng, pools, answerable):
  """(context, the index of its sentence with parentheses or None, the sentences' start offsets)."""
  with_group, without = pools
  sentences = [rng.choice(without) for _ in range(rng.randint(0, 2))]
  target = None
  if answerable:
    target = rng.randint(0, len(sentences))
    sentences.insert(target, rng.choice(with_group))
  elif not sentences:
    sentences.append(rng.choice(without))
  starts = [sum(len(sentence) + 1 for sentence in sentences[:index]) for index in range(len(sentences))]
  return " ".join(sentences), target, starts


def write_korquad(path, num_questions, seed, with_variants=False, split="train"):
  """A KorQuAD 1.0 file (SQuAD v1.1's layout, KorQuAD's version and ids) of `split`'s sentences, three paragraphs
  an article; `with_variants` adds a second gold answer to some questions: the group with its parentheses."""
  rng, pools = random.Random(seed), korean_reading_pools(split)
  articles = []
  for index in range(num_questions):
    context, target, starts = _korean_paragraph(rng, pools, answerable=True)
    match = KOREAN_PARENTHESES.search(context, starts[target])
    answers = [{"text": match.group(1), "answer_start": match.start(1)}]
    if with_variants and rng.random() < 0.3:
      answers.append({"text": match.group(0), "answer_start": match.start(0)})
    if index % 3 == 0:
      articles.append({"title": context.split()[0], "paragraphs": []})
    articles[-1]["paragraphs"].append({"qas": [{"answers": answers, "id": f"{6500000 + 1000 * seed + index}-0-0",
                                                "question": rng.choice(KOREAN_QUESTIONS)}], "context": context})
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(json.dumps({"version": "KorQuAD_v1.0", "data": articles}, ensure_ascii=False), encoding="utf-8")
  return str(path)


def write_klue_mrc(path, split, num_questions, seed, unanswerable_share=0.3):
  """A KLUE-MRC file (klue-mrc-v1.1_<split>.json's layout: an article a paragraph with its news_category and
  source, each question with its guid, question_type, is_impossible, answers and plausible_answers). Type 3 is
  unanswerable (a context without parentheses; its plausible answer is the context's first word), type 2 an
  answer in a later sentence, type 1 one in the first; some answers have a second form with the parentheses."""
  rng, pools = random.Random(seed), korean_reading_pools("dev" if split == "dev" else "train")
  articles = []
  for index in range(num_questions):
    impossible = rng.random() < unanswerable_share
    context, target, starts = _korean_paragraph(rng, pools, answerable=not impossible)
    answers, plausible = [], []
    if impossible:
      first_word = context.split()[0]
      plausible.append({"text": first_word, "answer_start": context.index(first_word)})
    else:
      match = KOREAN_PARENTHESES.search(context, starts[target])
      answers.append({"text": match.group(1), "answer_start": match.start(1)})
      if rng.random() < 0.3:
        answers.append({"text": match.group(0), "answer_start": match.start(0)})
    source = rng.choice(("wikipedia", "acrofan", "hankyung"))
    articles.append({
        "title": context.split()[0], "news_category": None if source == "wikipedia" else "IT과학", "source": source,
        "paragraphs": [{"context": context, "qas": [{
            "question": rng.choice(KOREAN_QUESTIONS), "answers": answers, "plausible_answers": plausible,
            "question_type": 3 if impossible else (1 if target == 0 else 2), "is_impossible": impossible,
            "guid": f"klue-mrc-v1_{split}_{seed:02d}{index:04d}"}]}]})
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(json.dumps({"version": "v1.1", "data": articles}, ensure_ascii=False), encoding="utf-8")
  return str(path)


def write_korquad2(folder, num_pages, seed, split="train", num_shards=2):
  """KorQuAD 2.x's official layout: `num_shards` files KorQuAD_2.1_<split>_NN.json in `folder`, each {"version",
  "data": pages}, a page {"title", "url", "context" (simplified HTML), "raw_html" (the whole page), "qas"}, a
  question {"question", "id", "answer": {"text", "answer_start", "html_answer_start"}}. Pages are built from
  `split`'s real Korean sentences (HTML-escaped): a heading, a paragraph holding a parenthesised group, a paragraph
  with a link, entities and a line break, a table and a list. Their three questions ask for the group (an answer
  inside a paragraph), a whole table cell `<td>...</td>` and the last two list items `<li>...</li><li>...</li>`
  (answers spanning tags). Returns the folder as a string."""
  import html  # pylint: disable=import-outside-toplevel

  rng, pools = random.Random(seed), korean_reading_pools(split)
  without_group = pools[1]
  pages = []
  for index in range(num_pages):
    paragraph, target, starts = _korean_paragraph(rng, pools, answerable=True)
    group = KOREAN_PARENTHESES.search(paragraph, starts[target])
    words = []
    while len(words) < 5:  # a title and four table cells
      words += rng.choice(without_group).split()
    other, last = rng.choice(without_group), rng.choice(without_group)
    title = words[0]
    context = f"<h2>{html.escape(title, quote=False)}</h2>\n<p>"
    group_start = len(context) + len(html.escape(paragraph[:group.start(1)], quote=False))
    group_html = html.escape(group.group(1), quote=False)
    context += html.escape(paragraph, quote=False) + "</p>\n"
    linked, rest = (other.split(" ", 1) + [""])[:2]
    context += (f'<p><a href="/wiki/{html.escape(linked)}">{html.escape(linked, quote=False)}</a> '
                f"{html.escape(rest, quote=False)} &amp;&nbsp;{html.escape(last, quote=False)}<br/>&#44032;&#xB098;"
                "</p>\n")
    cells = [html.escape(word, quote=False) for word in words[1:5]]
    context += "<table><tbody><tr><th>구분</th><th>내용</th></tr>\n"
    cell_start = None
    for row in range(2):
      context += f"<tr><td>{cells[2 * row]}</td>"
      if row == 1:
        cell_start = len(context)
      context += f"<td>{cells[2 * row + 1]}</td></tr>\n"
    context += "</tbody></table>\n<ul>"
    items = [html.escape(" ".join(rng.choice(without_group).split()[:3]), quote=False) for _ in range(3)]
    items_start = None
    for item_index, item in enumerate(items):
      if item_index == 1:
        items_start = len(context)
      context += f"<li>{item}</li>"
    context += "</ul>"
    answers = [(rng.choice(KOREAN_QUESTIONS), group_html, group_start),
               (f"표에서 {words[3]} 옆 칸에 적힌 것은 무엇입니까?", f"<td>{cells[3]}</td>", cell_start),
               ("목록의 마지막 두 항목은 무엇인가요?", "".join(f"<li>{item}</li>" for item in items[1:]), items_start)]
    head = ('<!DOCTYPE html><html><head><meta charset="utf-8">'
            f'<title>{html.escape(title, quote=False)} - 위키백과</title></head><body><div id="mw-content-text">')
    qas = []
    for number, (question, text, start) in enumerate(answers):
      assert context[start:start + len(text)] == text
      qas.append({"question": question, "id": f"{7000000 + 1000 * seed + index}-{number}",
                  "answer": {"text": text, "answer_start": start, "html_answer_start": len(head) + start}})
    pages.append({"title": title, "url": f"https://ko.wikipedia.org/wiki/{title}",
                  "context": context, "raw_html": f"{head}{context}</div></body></html>", "qas": qas})
  folder.mkdir(parents=True, exist_ok=True)
  for shard in range(num_shards):
    document = {"version": f"KorQuAD_2.1_{split}", "data": pages[shard::num_shards]}
    (folder / f"KorQuAD_2.1_{split}_{shard:02d}.json").write_text(json.dumps(document, ensure_ascii=False),
                                                                  encoding="utf-8")
  return str(folder)
