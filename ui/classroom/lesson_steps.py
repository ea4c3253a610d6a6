"""The lesson's data: the gallery of examples (each a link to a view with its model, text and head) and the steps of
the guided lesson (view, question, the teacher's notes and marks). Nothing here draws; ui/classroom/lesson.py walks
the steps.

An example or a step is data: the view, the sidebar's values and the view's own values written as their
query parameters appear in the URL ("L5" for layer 5). Every sentence in `what` is a claim about the model
on screen; tests/ui/classroom/test_lesson_claims.py computes each one.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ui.state import DEFAULT_MODEL, DEFAULT_TEXT

ANIMAL = DEFAULT_TEXT                       # "The animal didn't cross the street because it was too tired."
WIDE = ANIMAL.replace("tired", "wide")
RIVER = "I sat on the river bank and watched the boats go by."
RARE = "The river was unbelievably quiet"
BRACKET = "for i in range(10):\n    print(i"
NAME, PATH = "def area(name): return name *", "def area(path): return path *"
SHORE = ("The river bank was muddy after the rain", "The shore was dirty")


@dataclass(frozen=True)
class Example:
    key: str
    title: str
    view: str                              # a view's stem (ui.views)
    what: str                              # what to see, a few sentences, each true of the model on screen
    sidebar: dict = field(default_factory=dict)   # sidebar values: model, text
    params: dict = field(default_factory=dict)    # the view's own values, as query parameters
    head: tuple[int, int] | None = None           # (layer, head) the link opens on, read from HEAD_KEYS

    def query(self) -> dict[str, str]:
        """The link's query parameters: the sidebar's (model and text always, so that the link sets both in a
        running session as it does opened fresh) then the view's."""
        return query(self.sidebar, self.params)


def query(sidebar: dict, params: dict) -> dict[str, str]:
    """{'model': 'tiny'}, {'prune_off': 'L0 H2'} -> model, text (the default where not given), then the view's."""
    return {"model": DEFAULT_MODEL, "text": DEFAULT_TEXT, **{k: str(v) for k, v in sidebar.items()}, **params}


HEAD_KEYS = {"heads": ("heads_layer", "heads_head"), "inside_head": ("ih_bert_layer", "ih_bert_head"),
             "compare": ("cmp_layer", "cmp_head")}  # a view's layer and head widgets, where an example names one

EXAMPLES = (
    Example("previous", "A head that only looks back one token", "heads",
            "In **L0 H2** every token puts more than 99% of its attention on the token just before it: the bright "
            "line just under the diagonal. [CLS] has nothing before it and looks at itself. Try any text: the "
            "pattern does not change, because it depends on positions, not words.",
            {"model": "bert", "text": ANIMAL}, {"heads_layer": "L0", "heads_head": "H2"}, (0, 2)),
    Example("next", "…and one that looks ahead", "heads",
            "**L1 H8** is the mirror image: on this sentence a token gives on average about 70% of its attention "
            "to the token just after it.",
            {"model": "bert", "text": RIVER}, {"heads_layer": "L1", "heads_head": "H8"}, (1, 8)),
    Example("sink", "[CLS] as a sink that adds almost nothing", "inside_head",
            "**L2 H7** sends about 87% of the attention to [CLS]. Look at the V panel: [CLS]'s value row is "
            "nearly zero (its length is under a fiftieth of any other token's), so all that weight adds almost "
            "nothing to the output. In this MiniLM the sink is [CLS]; in BERT-base it is often [SEP] "
            "(Clark et al. 2019).",
            {"model": "bert", "text": ANIMAL},
            {"ih_bert_layer": "L2", "ih_bert_head": "H7"}, (2, 7)),
    Example("coref", "The pronoun that finds its noun", "heads",
            "In **L5 H11** the row of *it* puts about two thirds of its attention on *animal* and almost none on "
            "*street*. L3 H1 does the same. Hover the row of *it* to read the numbers.",
            {"model": "bert", "text": ANIMAL}, {"heads_layer": "L5", "heads_head": "H11"}, (5, 11)),
    Example("wide", "…but is it meaning?", "heads",
            "Change *tired* to *wide* and the street becomes what *it* is: **L5 H11** still puts more than half "
            "of *it*'s attention on *animal*. The head follows the subject of the sentence, not its meaning.",
            {"model": "bert", "text": WIDE}, {"heads_layer": "L5", "heads_head": "H11"}, (5, 11)),
    Example("finder", "Find the coreference heads yourself", "finder",
            "Ranked by the weight *it* puts on *animal*, the top two heads are **L3 H1** and **L5 H11**, both "
            "above 0.6; the third is under 0.3. Click one to open it in the Heads view.",
            {"model": "bert", "text": ANIMAL}, {"find_behaviour": "coreference"}),
    Example("bahdanau", "Bahdanau attention reading a date", "seq2seq",
            "The GRU writes **2021-03-03**. While it writes each digit of the year, over 95% of its attention lies "
            "on *2021* in the input, most of it on the very digit it is writing: a diagonal. The month 03 is read "
            "from the letters of *March*, not from a digit.",
            {}, {"s2s_date": "Wednesday, the 3rd of March 2021"}),
    Example("rope", "RoPE: only the distance counts", "positional",
            "Rotary positions turn q and k by angles proportional to their positions, so q·k depends only on the "
            "offset n − m: every diagonal of the score map is constant. The spread along a diagonal is below "
            "10⁻¹², which is float64 rounding.",
            {}, {"pos_tab": "RoPE"}),
    Example("scale", "Why divide by √d_k", "inside_head",
            "The toy layer with d_model 384, one head and **no scaling**: the scores are so large that softmax "
            "puts on average more than 95% of each row on a single key. Turn *scale by √d_k* back on and the "
            "largest weight falls to about a third.",
            {"model": "bert", "text": ANIMAL},
            {"ih_model": "Toy layer", "ih_d_model": "384", "ih_heads": "1", "ih_scale": "false"}),
    Example("causal", "The causal mask of a decoder", "inside_head",
            "The tiny decoder sorts **31415** into **11345**. In its softmax panel everything above the diagonal "
            "is exactly 0: each token sees only the tokens before it.",
            {"model": "bert", "text": ANIMAL}, {"ih_model": "Tiny decoder", "ih_digits": "31415"}),
    Example("bpe", "A rare word costs many tokens", "bpe",
            "BPE trained on the built-in story keeps *river* (in the story many times) as one token, but "
            "*unbelievably*, which the story uses once, falls into 8 pieces. MiniLM's WordPiece, trained on far "
            "more text, needs 5.",
            {}, {"bpe_text": RARE}),
    Example("gqa", "What grouped-query attention saves", "kv_cache",
            "With 8 query heads sharing 2 key/value heads (GQA) your decoder's cache is a quarter of what 8 "
            "separate heads would need. In the table below, Llama-3-8B (8 kv heads for 32 query heads) stores "
            "128 KiB per token at 2 bytes, four times less than Llama-2-7B's 512 KiB.",
            {}, {"kv_kvh": "2 (GQA)"}),
    Example("prune", "The head whose removal costs most", "pruning",
            "Switch off **L0 H2** of the tiny decoder (one of its 8 heads) and exact match on the held-out "
            "strings falls from 100% to under 10%. Without L0 H0 or L0 H3 about half stay right; any one head of "
            "layer 1 can go at a cost of 20 points or less.",
            {"model": "tiny", "text": "31415"}, {"prune_off": "L0 H2"}),
    Example("compare", "The same word, two contexts, and an honest reading", "compare",
            "The head whose attention from *bank* changes most between the two sentences is **L0 H2**, the "
            "previous-token head: *bank* follows *river* in one sentence and *the* in the other. A big difference "
            "is not always meaning.",
            {"model": "bert"}, {"cmp_layer": "L0", "cmp_head": "H2"}, (0, 2)),
    Example("bracket", "The heads that close a bracket", "next_token",
            "The built-in decoder's top next token is **)**. Split its logit: the largest direct shares of any head "
            "are **L3 H1** (about +3.4) and **L3 H3** (about +2.2), both in the last layer. The logit lens reads "
            "*.* after layers 1 and 2 and *)* only after layer 3.",
            {"model": "gpt", "text": BRACKET}, {"nt_tab": "Direct logit attribution"}),
    Example("patch", "Which head carries the argument's name?", "patching",
            "Copy one head's output from the clean run (`name`) into the corrupted one (`path`): no single head "
            "brings back more than a third of the preference for *name*; the most, **L2 H3**, about 0.29. The "
            "answer is spread over several heads, as circuits often are.",
            {"model": "gpt"}, {"patch_clean": NAME, "patch_corrupt": PATH, "patch_answer": " name",
                               "patch_wrong": " path"}),
    Example("induction", "Induction heads form suddenly", "induction",
            "Between training steps 1,100 and 1,200 layer 1's best prefix matching jumps from 0.19 to 0.80 and the "
            "loss on the repeated half falls from 3.27 to 1.33, while the first half's stays about 4.2.",
            {}, {"ind_step": "1200"}),
    Example("attribution", "Does attention explain the similarity?", "attribution",
            "Integrated gradients and occlusion both credit **muddy** most for the similarity to *The shore was "
            "dirty*, and so does last-layer attention among the words. But attention's next word, *bank*, gets a "
            "negative score from both: deleting it raises the similarity. (On a shared server, press *Integrated "
            "gradients …* first: the page draws the cheap methods before it is asked for these.)",
            {"model": "bert", "text": SHORE[0], "text_b": SHORE[1]}, {}),
)


@dataclass(frozen=True)
class Mark:
    """Where a step's question points in one figure (its show.plot name): a box around rows r0..r1 and columns
    c0..c1 (0-based positions on the axes; `axes` '' for the first panel, '2' for the second), the main
    diagonal, or one head's tile of the Heads overview (`head` = (layer, head))."""
    figure: str
    rows: tuple[int, int] = (0, 0)
    cols: tuple[int, int] = (0, 0)
    axes: str = ""
    diagonal: bool = False
    head: tuple[int, int] | None = None


@dataclass(frozen=True)
class Notes:
    """For the teacher, folded under the step's question (hidden in presenter mode): the answer the class should
    reach (each sentence true of the model on screen: tests/ui/classroom/test_lesson_claims.py computes it), the minutes
    of a 50-minute plan, and what the question points to, marked in the figure."""
    answer: str
    minutes: int
    marks: tuple[Mark, ...] = ()
    where: str = ""       # the marked place in words ("the row of 'animal' in the softmax panel")


@dataclass(frozen=True)
class Step:
    view: str
    title: str
    question: str
    notes: Notes
    sidebar: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)

    def query(self) -> dict[str, str]:
        """As Example.query: model and text always, so that every step restores its own."""
        return query(self.sidebar, self.params)


DATE = "Wednesday, the 3rd of March 2021"
LESSON = (
    Step("inside_head", "One head, inside", "Each softmax row sums to 1. In L0 H2, where does the row of 'animal' put "
         "its weight, and why would a model want a head that does only this?",
         Notes("Almost all of it (over 99%) on 'the', the token just before 'animal'. L0 H2 is a previous-token head: "
               "it copies each token's left neighbour into its vector, so later layers can read pairs of words "
               "('the animal', 'river bank') that no single token holds.", 6,
               (Mark("inside_head_softmax_A·V", rows=(2, 2), cols=(1, 1)),),
               "the row of 'animal' in the softmax panel"),
         {"model": "bert", "text": ANIMAL}, {"ih_bert_layer": "L0", "ih_bert_head": "H2"}),
    Step("heads", "Many heads", "Find a head that always looks one token back and one that looks at [CLS]. Why would "
         "a model keep both?",
         Notes("L0 H2 looks one token back (over 99% on the previous token, on any text). L2 H7 puts about 87% on "
               "[CLS], whose value vector is nearly zero: a head with nothing to add parks its weight there, since "
               "softmax must put it somewhere. Both are kept because both are useful: one moves a neighbour's "
               "information, the other lets a head switch itself off.", 5,
               (Mark("heads-overview", head=(0, 2)), Mark("heads-overview", head=(2, 7))), "the tiles of L0 H2 and "
               "L2 H7 in the grid"),
         {"model": "bert", "text": ANIMAL}),
    Step("positional", "Positions", "In the RoPE tab, every diagonal of the score map has one colour. Why can RoPE "
         "ignore where a pair of tokens starts, and what would attention see without any positions?",
         Notes("RoPE turns q by angle m·ω and k by n·ω; a dot product of two rotated vectors sees only the difference "
               "of the angles, so q·k depends on n − m alone: the spread along a diagonal is below 10⁻¹², float "
               "rounding. Without positions attention is a bag of words: both copies of 'the' get identical rows.", 4,
               (Mark("rope_scores", diagonal=True),), "the main diagonal of the score map"),
         {}, {"pos_tab": "RoPE"}),
    Step("bpe", "Tokens", "Why does 'unbelievably' cost 8 tokens here and 'river' one? What would a bigger "
         "vocabulary change?",
         Notes("BPE merges the pairs that are frequent in its training text: 'river' occurs many times in the built-in "
               "story and became one token; 'unbelievably' occurs once, so it stays in 8 pieces (MiniLM's WordPiece, "
               "trained on far more text, needs 5). A bigger vocabulary learns more merges: fewer pieces per rare "
               "word, a larger embedding table.", 4, (), "the row of 'unbelievably' in the table"),
         {}, {"bpe_text": RARE}),
    Step("seq2seq", "Alignments", "While the decoder writes the year, where does it look? And while it writes the "
         "month 03?",
         Notes("It writes 2021-03-03. For each digit of the year over 95% of the attention lies on '2021' in the "
               "input, most on the very digit it writes: a diagonal. For the month it reads the letters of 'March', "
               "not a digit: attention follows what the output needs, not the position.", 5,
               (Mark("seq2seq-seq2seq-bahdanau-alignment", rows=(0, 3), cols=(28, 31)),), "the rows of 2021 against "
               "'2021' in the input"),
         {}, {"s2s_date": DATE}),
    Step("graph", "Graphs", "After six layers, how much of each token is still itself (the diagonal of rollout)? "
         "Which tokens collect attention?",
         Notes("Little: on the rollout diagonal every word keeps at most a tenth of itself ([SEP] 0.10, the rest "
               "about 0.03 to 0.06); only [CLS] stays mostly itself (about two thirds). [CLS] collects most of the "
               "attention (over half of all rollout weight), then [SEP].", 4,
               (Mark("rollout-flow", diagonal=True, axes="2"),), "the diagonal of the rollout panel"),
         {"model": "bert", "text": ANIMAL}, {"graph_view": "All layers"}),
    Step("kv_cache", "The KV cache", "Generate with and without the cache. Why is it faster, and what grows with "
         "every token?",
         Notes("With the cache each step projects only the new token and reuses the stored keys and values; without "
               "it every step re-runs the whole sequence, so its cost grows with the length. The cache grows: "
               "2 · layers · kv heads · head size · bytes per token, 8 KiB per token for the default 4 layers × 8 "
               "heads of 32 in float32 (2 KiB with 2 kv heads).", 4),
         ),
    Step("pruning", "Pruning", "Switch off L0 H2 of the tiny decoder. Why does one head of eight matter so much, "
         "and how many others can go?",
         Notes("Exact match falls from 100% to under 10%: the sort depends on what L0 H2 reads, and no other head "
               "does it. Without L0 H0 or L0 H3 about half stay right; any one head of layer 1 can go for 20 points "
               "or less. The gradient colour measures a small dimming, switching off removes the head entirely: "
               "the two rank heads differently.", 5,
               (Mark("head-importance", rows=(0, 0), cols=(2, 2)),), "the square of L0 H2"),
         {"model": "tiny", "text": "31415"}),
    Step("next_token", "The next token", "The model's top next token is ')'. Which heads push it there directly, and "
         "from which layer on does the logit lens read ')'?",
         Notes("Two heads of the last layer: L3 H1 adds about +3.4 to the logit of ')' and L3 H3 about +2.2, the "
               "largest direct shares of any head. The logit lens reads '.' after layers 1 and 2 and ')' only after "
               "layer 3: the bracket is decided at the very end.", 4,
               (Mark("next_token_dla_heads", rows=(3, 3), cols=(1, 1)),), "the cell of L3 H1 in the heads' shares"),
         {"model": "gpt", "text": BRACKET}, {"nt_tab": "Direct logit attribution"}),
    Step("induction", "Induction heads form", "Slide from step 1,100 to 1,200. What happens to layer 1's heads and to "
         "the loss on the repeated half, and why does the first half's loss not move?",
         Notes("Layer 1's best prefix matching (L1 H0's) jumps from 0.19 to 0.80 and the repeat's loss falls from 3.27 "
               "to 1.33, together, while the first copy's stays about 4.2: random syllables cannot be predicted the "
               "first time, only copied the second time. Knocking out L0 H2, the previous-token head, takes the "
               "prefix matching of L1 H3, layer 1's best prefix matcher at the last checkpoint, from 0.86 to 0.38.", 4,
               (Mark("induction-heads", head=(1, 0)),), "the tile of L1 H0 in the heads' grid, where the stripe "
               "beside the diagonal appears"),
         {}, {"ind_step": "1100"}),
)
SLACK = 5  # minutes of a 50-minute class the plan leaves free: questions, a slow projector, a late start
assert sum(s.notes.minutes for s in LESSON) <= 50 - SLACK, "the lesson's minutes leave its slack in a 50-minute class"
