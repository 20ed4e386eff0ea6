"""End to end in a real editor: headless Neovim starts `gpulint lsp`, opens a
fixture file and writes the diagnostics (and a hover) it received to a JSON file.

Neovim 0.7 (Debian 12) has `vim.lsp.start_client` + `vim.lsp.buf_attach_client`
but not `vim.lsp.start` (0.8+), so the older pair is used; it works on both.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NVIM = shutil.which("nvim")

INIT_LUA = r"""
local out = os.getenv('GPULINT_NVIM_OUT')
local file = os.getenv('GPULINT_NVIM_FILE')
local root = os.getenv('GPULINT_NVIM_ROOT')
local python = os.getenv('GPULINT_PYTHON')

local function finish(result)
  local fh = io.open(out, 'w')
  fh:write(vim.fn.json_encode(result))
  fh:close()
  vim.cmd('qall!')
end

local function run()
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local bufnr = vim.api.nvim_get_current_buf()
  local client_id = vim.lsp.start_client({
    name = 'gpulint',
    cmd = { python, '-m', 'gpulint', 'lsp' },
    root_dir = root,
  })
  if not client_id then
    return finish({ error = 'vim.lsp.start_client returned nil' })
  end
  vim.lsp.buf_attach_client(bufnr, client_id)
  local function ours()
    local found = {}
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      if d.source == 'gpulint' then table.insert(found, d) end
    end
    return found
  end
  local got = vim.wait(180000, function() return #ours() > 0 end, 100)
  local items = {}
  local first_amp = nil
  for _, d in ipairs(ours()) do
    local lsp = (d.user_data or {}).lsp or {}
    local code = d.code or lsp.code
    table.insert(items, {
      lnum = d.lnum, col = d.col, end_lnum = d.end_lnum, end_col = d.end_col,
      severity = d.severity, message = d.message, source = d.source, code = code,
    })
    if code == 'AMP001' and first_amp == nil then first_amp = d end
  end
  local hover = nil
  if first_amp ~= nil then
    local params = {
      textDocument = { uri = vim.uri_from_bufnr(bufnr) },
      position = { line = first_amp.lnum, character = first_amp.col },
    }
    local responses = vim.lsp.buf_request_sync(bufnr, 'textDocument/hover', params, 60000) or {}
    for _, r in pairs(responses) do
      if r.result and r.result.contents then hover = r.result.contents.value end
    end
  end
  vim.lsp.stop_client(client_id)
  vim.wait(30000, function() return vim.lsp.get_client_by_id(client_id) == nil end, 100)
  finish({ got = got, diagnostics = items, hover = hover, nvim = tostring(vim.version().minor) })
end

vim.api.nvim_create_autocmd('VimEnter', { callback = function()
  local ok, err = pcall(run)
  if not ok then finish({ error = tostring(err) }) end
end })
"""


def _expected_amp001(root: Path, rel: str) -> tuple[set[int], str]:
    """Where `gpulint scan` puts AMP001 in the file, and its guidance: the editor must show the same."""
    from gpulint.testing import scan_tree

    result, _ = scan_tree(root)
    amp = [f for f in result.findings if f.code == "AMP001" and f.loc.path == rel]
    return {f.loc.line for f in amp}, (amp[0].guidance.strip().splitlines() or [""])[0] if amp else ""


@pytest.mark.slow
@pytest.mark.skipif(NVIM is None, reason="Neovim (nvim) is not installed: `apt-get install neovim` (CI's .ci/run installs it)")
def test_neovim_receives_amp001(tmp_path):
    root = FIXTURES / "pytorch-fp32-loop"
    if not (root / "train.py").is_file():
        pytest.skip("fixture pytorch-fp32-loop is missing")
    expected, guidance = _expected_amp001(root, "train.py")
    assert expected, "the fixture should have an AMP001 in train.py"
    init = tmp_path / "init.lua"
    init.write_text(INIT_LUA, encoding="utf-8")
    out = tmp_path / "diagnostics.json"
    home = tmp_path / "home"
    env = {
        **os.environ,
        "GPULINT_NVIM_OUT": str(out),
        "GPULINT_NVIM_FILE": str(root / "train.py"),
        "GPULINT_NVIM_ROOT": str(root),
        "GPULINT_PYTHON": sys.executable,
        # keep Neovim's state, logs and swap files out of the user's home
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_CACHE_HOME": str(home / "cache"),
    }
    proc = subprocess.run([NVIM, "--headless", "-n", "-i", "NONE", "--noplugin", "-u", str(init)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert out.is_file(), f"Neovim wrote no result (rc={proc.returncode}): {proc.stdout[-2000:]} {proc.stderr[-2000:]}"
    data = json.loads(out.read_text(encoding="utf-8"))
    assert "error" not in data, data
    assert data["got"], f"no gpulint diagnostics reached Neovim: {data}"
    amp = [d for d in data["diagnostics"] if d["code"] == "AMP001"]
    assert amp, data["diagnostics"]
    assert {d["lnum"] + 1 for d in amp} == expected  # Neovim lines are 0-based
    assert all(d["source"] == "gpulint" and d["severity"] == 2 for d in amp)  # vim.diagnostic.severity.WARN
    assert data["hover"] and "AMP001" in data["hover"] and guidance in data["hover"]
