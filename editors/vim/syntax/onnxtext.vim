" Vim syntax file
" Language:    onnxtext (textual ONNX models, https://github.com/onnx/onnx/blob/main/docs/Syntax.md)
" Filenames:   *.onnxtext, *.onnxtxt
" The word lists between the GENERATED markers come from onnxtext/lexer.py (tools/gen_editors.py);
" the rest is written by hand and mirrors grammar/lexical.lark.

if exists("b:current_syntax")
  finish
endif

let s:cpo_save = &cpo
set cpo&vim

syn case match
" Attribute lists and graph bodies span many lines: parse from the start for exact contexts.
syn sync fromstart
setlocal iskeyword=@,48-57,_

" Names and calls. A name (or "quoted name", or domain.Op:overload) right before ( or < is an operator
" call, a function definition or a graph name. Of two matches starting at one position, the later wins.
syn match onnxtextField "\<\h\w*\ze\s*:\%(\s*\"\)\@!"
syn match onnxtextFunction "\%(\h\w*\|\"\%([^\"\\]\|\\.\)*\"\)\%(\.\%(\h\w*\|\"\%([^\"\\]\|\\.\)*\"\)\)*\%(:\h\w*\)\=\ze\s*[(<]"

" GENERATED BEGIN (by tools/gen_editors.py: do not edit this region, run python tools/gen_editors.py)
syn keyword onnxtextType float uint8 int8 uint16 int16 int32 int64 string bool float16 double uint32
syn keyword onnxtextType uint64 complex64 complex128 bfloat16 float8e4m3fn float8e4m3fnuz float8e5m2
syn keyword onnxtextType float8e5m2fnuz uint4 int4 float4e2m1 float8e8m0 uint2 int2 float6e2m3
syn keyword onnxtextType float6e3m2
syn keyword onnxtextTypeCtor seq map optional sparse_tensor opaque tensor type
syn keyword onnxtextSection training_info raw base64 hex sparse elided unchecked
syn keyword onnxtextBoolean true false
syn match onnxtextHeaderKey "\<\%(configuration\|doc_string\|domain\|ir_version\|metadata_props\|model_version\|opset_import\|overload\|producer_name\|producer_version\|initialization\|algorithm\|initialization_binding\|update_binding\)\>\ze\s*:"
syn match onnxtextAttrType contained "\%(\%(\h\w*\|\"[^\"]*\"\)\s*:\s*\)\@<=\<\%(float\|floats\|graph\|graphs\|int\|ints\|sparse_tensor\|sparse_tensors\|string\|strings\|tensor\|tensors\|type_proto\|type_protos\)\>\ze\s*="
" GENERATED END

" Attribute lists: < after a call's name, or after a call's inputs (`y = Loop (m, c) <body = ...>`).
" Inside, the first name of each entry is an attribute.
" Nested brackets are transparent regions, so an entry separator is only a top-level comma.
syn region onnxtextNested transparent contained start="(" end=")" contains=@onnxtextTop,onnxtextNested
syn region onnxtextNested transparent contained start="\[" end="\]" contains=@onnxtextTop,onnxtextNested
syn region onnxtextNested transparent contained start="{" end="}" contains=@onnxtextTop,onnxtextNested
syn region onnxtextNested transparent contained start="<" end="=\@<!>" contains=@onnxtextTop,onnxtextNested
syn region onnxtextAttrList matchgroup=onnxtextDelimiter start="\%(\w\|\"\)\@<=\s*\zs<" start="\%(\%(\h\w*\|\"\%([^\"\\]\|\\.\)*\"\)\s*([^()]*)\)\@<=\s*\zs<" end="=\@<!>" contains=onnxtextAttrName,onnxtextAttrType,@onnxtextTop,onnxtextNested

" Literals (defined after the names so that numbers and strings win where both could start).
syn match onnxtextNumber "\%(\w\|\.\)\@<!-\=\d\+\>"
syn match onnxtextFloat "\%(\w\|\.\)\@<!-\=\%(\d\+\.\d*\%([eE][-+]\=\d\+\)\=\|\.\d\+\%([eE][-+]\=\d\+\)\=\|\d\+[eE][-+]\=\d\+\)\>"
syn match onnxtextFloat "\c\%(\w\|\.\)\@<!-\=\<\%(infinity\|inf\|nan\)\>"
syn match onnxtextHex "\<0[xX]\x\+\>"
syn region onnxtextString start=+"+ skip=+\\\\\|\\"+ end=+"+ contains=onnxtextEscape
syn match onnxtextEscape contained "\\\%(x\x\x\|u\x\{4}\|U\x\{8}\|.\)"
" A quoted name right before ( or < is a call, not a string (matches defined later win at one position).
syn match onnxtextFunction "\"\%([^\"\\]\|\\.\)*\"\ze\s*[(<]"
" The first name of each attribute list entry (quoted or not): after the string rules, so it wins.
syn match onnxtextAttrName contained "\%(\%(<\|,\)\s*\|^\s*\)\@<=\%(\h\w*\|\"[^\"]*\"\)\ze\s*\%(:\s*\h\w*\s*\)\=\%(=>\@!\|,\|>\)"

syn match onnxtextAnnotation "@\h\w*"
syn match onnxtextAnnotation "@\ze\s*\""
syn match onnxtextLabel "^\s*\[\s*\zs\%(\h\w*\|\"[^\"]*\"\)\ze\s*\]\s*[A-Za-z_\"=,]"
syn match onnxtextOperator "=>\="

syn match onnxtextDocComment "///.*$" contains=@Spell
syn match onnxtextComment "//\%(/\)\@!.*$" contains=onnxtextTodo,@Spell
syn match onnxtextComment "#.*$" contains=onnxtextTodo,@Spell
syn keyword onnxtextTodo contained TODO FIXME XXX NOTE

syn cluster onnxtextTop contains=onnxtextType,onnxtextTypeCtor,onnxtextSection,onnxtextBoolean,onnxtextHeaderKey,onnxtextFunction,onnxtextField,onnxtextAttrList,onnxtextNumber,onnxtextFloat,onnxtextHex,onnxtextString,onnxtextAnnotation,onnxtextOperator,onnxtextDocComment,onnxtextComment

hi def link onnxtextType        Type
hi def link onnxtextTypeCtor    Type
hi def link onnxtextAttrType    Type
hi def link onnxtextSection     Keyword
hi def link onnxtextHeaderKey   Keyword
hi def link onnxtextBoolean     Boolean
hi def link onnxtextFunction    Function
hi def link onnxtextAttrName    Identifier
hi def link onnxtextField       Identifier
hi def link onnxtextLabel       Label
hi def link onnxtextAnnotation  PreProc
hi def link onnxtextNumber      Number
hi def link onnxtextHex         Number
hi def link onnxtextFloat       Float
hi def link onnxtextString      String
hi def link onnxtextEscape      SpecialChar
hi def link onnxtextOperator    Operator
hi def link onnxtextDelimiter   Delimiter
hi def link onnxtextComment     Comment
hi def link onnxtextDocComment  SpecialComment
hi def link onnxtextTodo        Todo

let b:current_syntax = "onnxtext"

let &cpo = s:cpo_save
unlet s:cpo_save
