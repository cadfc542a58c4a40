# shellcheck shell=bash
# Sourced by scripts/serve, scripts/test, scripts/bench and scripts/compat, from the checkout's
# root. `ensure_venv [EXTRAS] [--upgrade-pip]` makes the virtualenv ($MINIBROKER_VENV, default
# .venv, relative to the checkout's root; made with $PYTHON, default python3) and installs this
# checkout into it editable, with the given extras (e.g. "test,spark"), only when something the
# install depends on changed since the last successful install with those extras:
# pyproject.toml, setup.py, the C sources under minibroker/, the checkout's path, or a missing
# or broken venv. A hash of those inputs is kept in a stamp file in the venv, one per set of
# extras.
#
# Quiet: pip's output goes to $VENV/minibroker-install.log and is printed only if the install
# fails. Sets VENV to the venv's path.

VENV=${MINIBROKER_VENV:-.venv}

_mb_sha256() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum | cut -d' ' -f1
    else
        shasum -a 256 | cut -d' ' -f1
    fi
}

# The hash of everything that changes what `pip install -e '.[EXTRAS]'` produces.
_mb_inputs_hash() {
    local extras=$1 file
    {
        printf 'checkout %s\nextras %s\n' "$PWD" "$extras"
        for file in pyproject.toml setup.py $(find minibroker \( -name '*.c' -o -name '*.h' \) |
            LC_ALL=C sort); do
            printf '== %s\n' "$file"
            cat "$file"
        done
    } | _mb_sha256
}

_mb_venv_works() {
    [ -x "$VENV/bin/python" ] && [ -x "$VENV/bin/minibroker" ]
}

# Make (or, when broken, remake) the venv, install into it and byte-compile the checkout's
# package; all output goes to stdout.
_mb_install() {
    local spec=$1 upgrade_pip=$2
    if ! "$VENV/bin/python" -c '' 2>/dev/null; then
        # --clear only on a broken venv, never on some other directory that happens to be there.
        "${PYTHON:-python3}" -m venv $([ -e "$VENV/pyvenv.cfg" ] && echo --clear) "$VENV" || return
    fi
    if [ -n "$upgrade_pip" ]; then
        "$VENV/bin/python" -m pip install --upgrade pip || return
    fi
    "$VENV/bin/python" -m pip install -e "$spec" || return
    # What pip does for the packages it installs: the next start need not compile them.
    "$VENV/bin/python" -m compileall -q -j 0 minibroker
}

ensure_venv() {
    local extras=${1:-} upgrade_pip=${2:-} spec=. stamp want log
    [ -n "$extras" ] && spec=".[$extras]"
    stamp="$VENV/.minibroker-install${extras:+-${extras//,/-}}.stamp"
    want=$(_mb_inputs_hash "$extras")
    if _mb_venv_works && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    log=$(mktemp "${TMPDIR:-/tmp}/minibroker-install.XXXXXX")
    echo "minibroker: installing '$spec' into $VENV (first run, or the packaging changed)" >&2
    if ! PIP_DISABLE_PIP_VERSION_CHECK=1 _mb_install "$spec" "$upgrade_pip" >"$log" 2>&1; then
        cat "$log" >&2
        echo "minibroker: installing '$spec' into $VENV failed (output above, also in $log)" >&2
        return 1
    fi
    mv "$log" "$VENV/minibroker-install.log"
    echo "$want" >"$stamp"
}
