" Vim indent file for onnxtext: one level per open bracket ( [ { <, as the printer indents.
if exists("b:did_indent")
  finish
endif
let b:did_indent = 1

setlocal indentexpr=OnnxtextIndent(v:lnum)
setlocal indentkeys=0},0),0],0>,!^F,o,O
let b:undo_indent = "setlocal indentexpr< indentkeys<"

if exists("*OnnxtextIndent")
  finish
endif

" Net count of opening minus closing brackets on a line, ignoring strings, comments and '=>'.
function! s:Balance(line) abort
  let l:s = substitute(a:line, '"\%([^"\\]\|\\.\)*"', '""', 'g')
  let l:s = substitute(l:s, '\%(#\|//\).*$', '', '')
  let l:s = substitute(l:s, '=>', '', 'g')
  return len(substitute(l:s, '[^([{<]', '', 'g')) - len(substitute(l:s, '[^)\]}>]', '', 'g'))
endfunction

function! OnnxtextIndent(lnum) abort
  let l:prev = prevnonblank(a:lnum - 1)
  if l:prev == 0
    return 0
  endif
  let l:ind = indent(l:prev)
  let l:prevline = getline(l:prev)
  " a line that starts with closers was already dedented: do not count those closers twice
  let l:lead = matchstr(l:prevline, '^\s*[)\]}>]*')
  let l:ind += shiftwidth() * (s:Balance(l:prevline) + len(substitute(l:lead, '\s', '', 'g')))
  let l:ind -= shiftwidth() * len(substitute(matchstr(getline(a:lnum), '^\s*[)\]}>]*'), '\s', '', 'g'))
  return l:ind < 0 ? 0 : l:ind
endfunction
