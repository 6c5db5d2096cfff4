#!/usr/bin/env bash
# An HTML template for `dvc plots show --html-template` that renders offline: vega, vega-lite and
# vega-embed inlined, at exactly the versions dvc-render's default page loads from the CDN
# (dvc_render/vega.py, dvc 3.67). `make plots` runs it; nothing it writes is committed.
#
#   bash scripts/build_plots_template.sh [OUT.html] [CACHE_DIR]
#
# OUT.html defaults to .futurelm/plots/template.html; CACHE_DIR (default .futurelm/npm) keeps the
# `npm pack` tarballs, so only the first run needs the npm registry.
set -euo pipefail

out=${1:-.futurelm/plots/template.html}
cache=${2:-.futurelm/npm}
PACKAGES=("vega@5.20.2" "vega-lite@5.2.0" "vega-embed@6.18.2")   # load order matters

command -v npm >/dev/null || { echo "npm is needed to fetch ${PACKAGES[*]}" >&2; exit 2; }
mkdir -p "$cache" "$(dirname "$out")"
tmp=$(mktemp "${out}.XXXXXX")
trap 'rm -f "$tmp"' EXIT

{
    printf '<!DOCTYPE html>\n<html>\n<head>\n    {refresh_tag}\n    <meta charset="utf-8">\n'
    printf '    <title>futurelm plots</title>\n'
    for spec in "${PACKAGES[@]}"; do
        name=${spec%@*}
        version=${spec#*@}
        tarball="$cache/$name-$version.tgz"
        if [ ! -s "$tarball" ]; then
            (cd "$cache" && npm pack --silent "$spec" >/dev/null)
        fi
        printf '    <!-- %s (inlined from npm) -->\n    <script type="text/javascript">\n' "$spec"
        # A literal "</script" inside the code would end the element early.
        tar -xzOf "$tarball" "package/build/$name.min.js" | sed 's#</script#<\\/script#g'
        printf '\n    </script>\n'
    done
    printf '    <style>\n        table {\n            border-spacing: 15px;\n        }\n    </style>\n'
    printf '</head>\n<body>\n    {plot_divs}\n</body>\n</html>\n'
} > "$tmp"

if grep -Eiq '<script[^>]*src=["'"'"']?https?:' "$tmp"; then
    echo "$out would load a script from the network" >&2
    exit 1
fi
chmod 644 "$tmp"
mv "$tmp" "$out"
trap - EXIT
echo "wrote $out ($(wc -c < "$out") bytes: ${PACKAGES[*]})" >&2
