#!/usr/bin/env bash
# Lay out WordNet 3.0 for nltk without nltk's downloader (its server is unreachable here).
# Debian's wordnet-base + wordnet-sense-index install the database under /usr/share/wordnet;
# nltk wants <NLTK_DATA>/corpora/wordnet with those files plus `lexnames`, which Debian does not
# ship as a file (it is documented in the lexnames(5WN) man page), so we write it here.
# Usage: scripts/setup_wordnet.sh <nltk_data dir>   (the Makefile uses .venv/nltk_data, which
# nltk searches automatically because it is <sys.prefix>/nltk_data).
set -euo pipefail
target="${1:?usage: setup_wordnet.sh NLTK_DATA_DIR}"
src=/usr/share/wordnet
if [ ! -f "$src/data.noun" ] || [ ! -f "$src/index.sense" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "WordNet is missing: run 'sudo apt-get install wordnet-base wordnet-sense-index' and retry." >&2
    exit 1
  fi
  apt-get install -y -qq wordnet-base wordnet-sense-index >/dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq wordnet-base wordnet-sense-index; }
fi
dest="$target/corpora/wordnet"
mkdir -p "$dest"
# Copies, not links: nltk refuses files whose real path escapes its data root.
for f in "$src"/*; do
  [ -f "$f" ] && cp -f "$f" "$dest/"
done
# lexnames(5WN): file number, lexicographer file name, syntactic category (1 noun .. 4 adv).
python3 - "$dest/lexnames" <<'PY'
import sys
names = ("adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute "
         "noun.body noun.cognition noun.communication noun.event noun.feeling noun.food noun.group "
         "noun.location noun.motive noun.object noun.person noun.phenomenon noun.plant "
         "noun.possession noun.process noun.quantity noun.relation noun.shape noun.state "
         "noun.substance noun.time verb.body verb.change verb.cognition verb.communication "
         "verb.competition verb.consumption verb.contact verb.creation verb.emotion verb.motion "
         "verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl").split()
pos = {"adj": 3, "adv": 4, "noun": 1, "verb": 2}
with open(sys.argv[1], "w") as fh:
    for i, name in enumerate(names):
        fh.write(f"{i:02d}\t{name}\t{pos[name.split('.')[0]]}\n")
PY
echo "WordNet ready in $dest"
