#!/usr/bin/env bash
# Installs the system tools docflow uses (Debian's packages).
#   scripts/install-deps.sh run    the processing tools (make run)
#   scripts/install-deps.sh test   those plus the servers the tests talk to and the
#                                  headless browser of e2e/browser's tests (make test, make bench)
# Idempotent: packages already present are skipped. Needs root (or sudo).
set -euo pipefail

profile="${1:-test}"
need=()
want() { dpkg -s "$1" >/dev/null 2>&1 || need+=("$1"); }

for p in tesseract-ocr tesseract-ocr-eng tesseract-ocr-deu tesseract-ocr-fra \
         tesseract-ocr-spa tesseract-ocr-ita poppler-utils ocrmypdf img2pdf \
         librsvg2-bin libreoffice-core-nogui libreoffice-writer-nogui \
         libreoffice-calc-nogui libreoffice-impress-nogui fonts-dejavu-core util-linux; do
  want "$p"
done
# npm installs the /ops page's chart library at build time (scripts/web.sh);
# a Node.js install of its own that brings npm is kept.
command -v npm >/dev/null 2>&1 || want npm
if [ "$profile" = "test" ]; then
  # prometheus brings promtool, which checks deploy/prometheus's rules.
  # rclone and apache2-bin serve WebDAV to the storage destinations' tests (two
  # independent implementations); openssh-server and vsftpd serve SFTP and FTP.
  for p in clickhouse-server clickhouse-client wrk dovecot-core dovecot-imapd chromium prometheus rclone apache2-bin \
           openssh-server vsftpd; do
    want "$p"
  done
fi

if [ ${#need[@]} -eq 0 ]; then
  echo "install-deps: all system packages present ($profile)"
  exit 0
fi

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "install-deps: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
echo "install-deps: done"
