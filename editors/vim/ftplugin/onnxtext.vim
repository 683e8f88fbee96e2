" Vim filetype plugin for onnxtext: comments and indentation settings (indent/onnxtext.vim indents).
if exists("b:did_ftplugin")
  finish
endif
let b:did_ftplugin = 1

setlocal commentstring=#\ %s
setlocal comments=:///,://,:#
setlocal formatoptions-=t formatoptions+=croql
" The printer indents by two spaces.
setlocal expandtab shiftwidth=2 softtabstop=2 tabstop=8 autoindent
setlocal suffixesadd=.onnxtext,.onnxtxt

let b:undo_ftplugin = "setlocal commentstring< comments< formatoptions< expandtab< shiftwidth< softtabstop<"
      \ . " tabstop< autoindent< suffixesadd<"
