" Detect onnxtext files by extension.
autocmd BufRead,BufNewFile *.onnxtext,*.onnxtxt setfiletype onnxtext
