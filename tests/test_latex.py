import pytest

from pipeline.corpus.latex import latex_to_unicode


@pytest.mark.parametrize("latex, expected", [
    # the common escapes: umlaut, quotes, dash, protected capitals, per cent
    ('{\\"u}', "ü"),
    ("{``}quoted{''}", "“quoted”"),
    ("1990{--}2000", "1990–2000"),
    ("{B}ERT", "BERT"),
    ("5{\\%} better", "5% better"),
    # accents in every spelling the export uses
    ("S{\\o}gaard", "Søgaard"),
    ("{\\v{S}}m{\\'\\i}d", "Šmíd"),
    ("na{\\\"\\i}ve", "naïve"),
    ("Fran{\\c{c}}ois", "François"),
    ("\\c c", "ç"),
    ("Rom{\\^a}n{\\u{a}}", "Română"),
    ("\\textcommabelow{s}i", "și"),
    ("{\\.G}iljan", "Ġiljan"),
    ("Dharma{\\'s}{\\=a}stra", "Dharmaśāstra"),
    ("Pl{\\\"u}ss, Maa{\\ss}, {\\aa}, {\\l}{\\'o}d{\\'z}", "Plüss, Maaß, å, łódź"),
    ("\\^{}", "^"),
    # quotes and dashes
    ("model{'}s", "model's"),
    ("{`}single{'}", "‘single'"),
    ("a---b", "a—b"),
    ("a {---} b", "a — b"),
    # escaped specials and symbols
    ("R{\\&}D, a\\_b, \\#1, \\$5", "R&D, a_b, #1, $5"),
    ("{\\textgreater}95{\\%} and {\\textless}b{\\textgreater}", ">95% and <b>"),
    ("{\\textasciitilde}3", "~3"),
    ("hy\\-phen", "hyphen"),
    # formatting commands keep their argument, nested braces included
    ("\\textit{very {B}ig} \\textbf{bold}", "very Big bold"),
    ("see \\url{https://github.com/x/y_z}", "see https://github.com/x/y_z"),
    # maths
    ("$\\alpha \\rightarrow F_1$", "α → F_1"),
    ("{\\mbox{$\\times$}} 11", "× 11"),
    # ~ is a non-breaking space, except inside a URL path
    ("Treebank~2.0", "Treebank 2.0"),
    ("https://www.cs.cmu.edu/~glai1/data", "https://www.cs.cmu.edu/~glai1/data"),
    # whitespace normalisation
    ("  two\n      lines\tand   spaces ", "two lines and spaces"),
    # unknown control words keep their name rather than vanish
    ("\\foo{bar}", "foobar"),
    ("plain text stays", "plain text stays"),
    ("", ""),
])
def test_latex_to_unicode(latex, expected):
    assert latex_to_unicode(latex) == expected


def test_control_word_is_not_mistaken_for_an_accent():
    # \u is the breve accent, \url a command; \v is the caron, \varepsilon a symbol
    assert latex_to_unicode("\\url{a} \\u{g} $\\varepsilon$ \\v{s}") == "a ğ ε š"


def test_result_is_nfc_composed():
    decoded = latex_to_unicode("{\\'e}")
    assert decoded == "\u00e9" and len(decoded) == 1
