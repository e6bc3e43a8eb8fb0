# Sourced by bench/site.sh and bench/site_ab.sh: the sites they serve.
#
# site_make small|docs DIR : DIR/root, the site, readable by all (nginx's worker runs as
# nobody when we are root), and DIR/list, its URL paths; sets `cache` to a cache size that
# holds the whole site twice over.
#   small: 10,000 files of 1-8 KB (CSS, JS, SVG, JSON, WOFF2), SITE_FILES and SITE_SEED
#          (default 10000 and 1) to change them;
#   docs:  the Python 3 documentation from Debian's python3-doc (HTML, CSS, JS, PNG, SVG).
site_make() {
    local files="python3 $(dirname "${BASH_SOURCE[0]}")/site_files.py" docs
    case $1 in
        small) $files small "$2/root" "$2/list" "${SITE_FILES:-10000}" "${SITE_SEED:-1}" ;;
        docs)
            docs=/usr/share/doc/python3/html
            [ -f "$docs/index.html" ] || { echo "needs Debian's python3-doc (apt-get install python3-doc)" >&2; return 1; }
            echo "python3-doc $(dpkg-query -W -f '${Version}' python3-doc)"
            $files copy "$docs/" "$2/root" "$2/list" html,css,js,png,svg ;;
        *) echo "unknown site $1 (small or docs)" >&2; return 1 ;;
    esac
    chmod -R a+rX "$2/root"
    cache=$(( $(find "$2/root" -type f | wc -l) * 2 ))
}
