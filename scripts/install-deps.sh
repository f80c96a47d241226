#!/usr/bin/env bash
# Installs the system tools docflow's processing steps and tests use (Debian).
# Idempotent: packages already present are skipped. Needs root (or sudo).
set -euo pipefail

need=()
want() { dpkg -s "$1" >/dev/null 2>&1 || need+=("$1"); }

for p in tesseract-ocr tesseract-ocr-eng tesseract-ocr-deu tesseract-ocr-fra \
         tesseract-ocr-spa tesseract-ocr-ita poppler-utils ocrmypdf img2pdf \
         librsvg2-bin libreoffice-core-nogui libreoffice-writer-nogui \
         libreoffice-calc-nogui libreoffice-impress-nogui fonts-dejavu-core \
         clickhouse-server clickhouse-client wrk dovecot-imapd openssh-server; do
  want "$p"
done

if [ ${#need[@]} -eq 0 ]; then
  echo "install-deps: all system packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "install-deps: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
echo "install-deps: done"
