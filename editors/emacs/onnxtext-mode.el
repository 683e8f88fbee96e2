;;; onnxtext-mode.el --- Major mode for onnxtext (textual ONNX models) -*- lexical-binding: t -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "26.1"))
;; Keywords: languages
;; URL: https://github.com/onnx/onnx/blob/main/docs/Syntax.md

;;; Commentary:

;; Highlighting, comments and indentation for .onnxtext / .onnxtxt files.  The word lists between
;; the GENERATED markers come from onnxtext/lexer.py (run python tools/gen_editors.py); the rest
;; mirrors grammar/lexical.lark.
;;
;; Install: put this file on your `load-path' and add (require 'onnxtext-mode).

;;; Code:

(require 'rx)

(defgroup onnxtext nil
  "Major mode for onnxtext files."
  :group 'languages)

(defcustom onnxtext-indent-offset 2
  "Indentation per open bracket (the printer uses 2)."
  :type 'integer
  :safe #'integerp)

;; GENERATED BEGIN (by tools/gen_editors.py: do not edit this region, run python tools/gen_editors.py)
(defconst onnxtext-data-types
  '("float" "uint8" "int8" "uint16" "int16" "int32" "int64" "string" "bool" "float16" "double" "uint32" "uint64" "complex64" "complex128" "bfloat16" "float8e4m3fn" "float8e4m3fnuz" "float8e5m2" "float8e5m2fnuz" "uint4" "int4" "float4e2m1" "float8e8m0" "uint2" "int2" "float6e2m3" "float6e3m2")
  "Element types (onnxtext/dtypes.py).")
(defconst onnxtext-type-constructors
  '("seq" "map" "optional" "sparse_tensor" "opaque" "tensor" "type")
  "Words that build a type.")
(defconst onnxtext-section-words
  '("training_info" "raw" "base64" "hex" "sparse" "elided" "unchecked")
  "Section and tensor data keywords.")
(defconst onnxtext-constants
  '("true" "false")
  "Boolean literals.")
(defconst onnxtext-header-keys
  '("configuration" "doc_string" "domain" "ir_version" "metadata_props" "model_version" "opset_import" "overload" "producer_name" "producer_version" "initialization" "algorithm" "initialization_binding" "update_binding")
  "Header keys of models and functions, and training_info fields.")
(defconst onnxtext-attribute-types
  '("float" "floats" "graph" "graphs" "int" "ints" "sparse_tensor" "sparse_tensors" "string" "strings" "tensor" "tensors" "type_proto" "type_protos")
  "Declared attribute types.")
(defconst onnxtext-special-floats
  '("infinity" "inf" "nan")
  "Float literals spelled as words.")
;; GENERATED END

(defconst onnxtext--ident "[A-Za-z_][A-Za-z0-9_]*")
(defconst onnxtext--quoted "\"\\(?:[^\"\\\\]\\|\\\\.\\)*\"")
(defconst onnxtext--name (concat "\\(?:" onnxtext--ident "\\|" onnxtext--quoted "\\)"))

(defconst onnxtext--opref
  (concat onnxtext--name "\\(?:\\." onnxtext--name "\\)*\\(?::" onnxtext--name "\\)?")
  "An operator reference: domain.Op:overload, parts possibly quoted.")

(defun onnxtext--words (words)
  "A regexp matching one of WORDS as a whole word."
  (concat "\\_<" (regexp-opt words t) "\\_>"))

(defun onnxtext--any-case (word)
  "A regexp matching WORD in any letter case (inf, Inf, NaN...)."
  (mapconcat (lambda (c) (format "[%c%c]" (downcase c) (upcase c))) word ""))

(defun onnxtext--attribute-list-p (open)
  "Non-nil when the `<' at OPEN starts an attribute list.
That is when it follows an operator or function name, or a call's
inputs: `y = Loop (m, c) <body = ...>'."
  (save-excursion
    (goto-char open)
    (skip-chars-backward " \t")
    (when (eq (char-before) ?\))
      (condition-case nil
          (progn (backward-sexp) (skip-chars-backward " \t"))
        (error nil)))
    (let ((c (char-before)))
      (and c (or (eq c ?\") (eq c ?_) (memq (char-syntax c) '(?w)))))))

(defun onnxtext--match-attribute (limit)
  "Find the next attribute name before LIMIT.
That is the first name of an entry of an attribute list."
  (let (found)
    (while (and (not found)
                (re-search-forward (concat "\\(" onnxtext--name "\\)[ \t]*\\(?::[ \t]*"
                                           onnxtext--ident "[ \t]*\\)?\\(?:=[^>]\\|[,>]\\)")
                                   limit t))
      ;; syntax-ppss and forward-comment clobber the match data: keep the bounds first
      (let* ((start (match-beginning 1))
             (end (match-end 1))
             (state (syntax-ppss start))
             (open (nth 1 state)))
        (when (and (not (nth 3 state)) (not (nth 4 state)) open
                   (eq (char-after open) ?<)
                   (onnxtext--attribute-list-p open)
                   (save-excursion
                     (goto-char start)
                     (forward-comment (- (point)))
                     (memq (char-before) '(?< ?,))))
          (setq found t)
          (set-match-data (list start end))
          (goto-char end))
        (unless found (goto-char (max (1+ start) end)))))
    found))

(defun onnxtext--matcher (regexp pred)
  "A font-lock matcher: the next match of REGEXP whose start satisfies PRED.
PRED is called with the `syntax-ppss' state at the match start."
  (lambda (limit)
    (let (found)
      (while (and (not found) (re-search-forward regexp limit t))
        (let ((data (match-data)))
          (when (funcall pred (save-match-data (save-excursion (syntax-ppss (match-beginning 0)))))
            (setq found t))
          (set-match-data data)))
      found)))

(defun onnxtext--string-p (state)
  "Non-nil when STATE (from `syntax-ppss') is inside a string."
  (nth 3 state))

(defconst onnxtext--call (concat "\\(" onnxtext--opref "\\)[ \t]*[(<]")
  "A call, function definition or graph name: an op reference before ( or <.")

(defun onnxtext--call-p (state)
  "Non-nil when the `onnxtext--call' match (starting in STATE) is a real call.
Comments never hold calls; strings only when the quoted name itself is the match
\(\"Optional\"(x)); type constructors such as seq( are types."
  (let ((start (match-beginning 1)))
    (and (not (nth 4 state))
         (not (nth 3 state))
         (not (memq (char-before start) '(?_ ?. ?\")))
         (not (and (char-before start) (eq (char-syntax (char-before start)) ?w)))
         (not (member (match-string 1) (cons "sparse" onnxtext-type-constructors))))))

(defconst onnxtext-font-lock-keywords
  `((,(onnxtext--words onnxtext-data-types) . font-lock-type-face)
    (,(concat (onnxtext--words (remove "tensor" onnxtext-type-constructors)) "[ \t]*(") 1 font-lock-type-face)
    ("\\_<tensor\\_>" . font-lock-type-face)
    (,(concat (onnxtext--words onnxtext-header-keys) "[ \t]*:") 1 font-lock-keyword-face)
    ("\\_<\\(training_info\\|raw\\|elided\\)[ \t]*{" 1 font-lock-keyword-face)
    ("\\_<\\(base64\\|hex\\)[ \t]*\"" 1 font-lock-keyword-face)
    ("\\_<\\(sparse\\)[ \t]*(" 1 font-lock-keyword-face)
    (,(onnxtext--words onnxtext-constants) . font-lock-constant-face)
    ;; calls override strings ("Optional"(x)) but not comments; a type constructor is no call
    (,(onnxtext--matcher onnxtext--call #'onnxtext--call-p)
     1 font-lock-function-name-face t)
    (onnxtext--match-attribute 0 font-lock-variable-name-face t)
    (,(concat "\\(" onnxtext--name "\\)[ \t]*:[ \t]*\\(" (regexp-opt onnxtext-attribute-types) "\\)[ \t]*=")
     2 font-lock-type-face)
    (,(onnxtext--matcher "\\\\\\(?:x[0-9a-fA-F]\\{2\\}\\|u[0-9a-fA-F]\\{4\\}\\|U[0-9a-fA-F]\\{8\\}\\|.\\)"
                         #'onnxtext--string-p)
     0 font-lock-constant-face t)
    (,(concat "@" onnxtext--ident) . font-lock-preprocessor-face)
    (,(concat "^[ \t]*\\[[ \t]*\\(" onnxtext--name "\\)[ \t]*\\]") 1 font-lock-constant-face)
    (,(concat "\\(?:-\\|\\_<\\)\\(?:" (mapconcat #'onnxtext--any-case onnxtext-special-floats "\\|") "\\)\\_>")
     . font-lock-constant-face)
    ("\\_<0[xX][0-9a-fA-F]+\\_>" . font-lock-constant-face)
    ("\\(?:^\\|[^A-Za-z0-9_.]\\)\\(-?\\(?:[0-9]+\\.[0-9]*\\|\\.[0-9]+\\|[0-9]+\\)\\(?:[eE][-+]?[0-9]+\\)?\\)"
     1 font-lock-constant-face)
    ("=>?" . font-lock-builtin-face))
  "Font-lock rules for `onnxtext-mode'.")

(defun onnxtext--syntactic-face (state)
  "The face of a comment or string in STATE (from `syntax-ppss').
Doc comments (///) get the doc face."
  (cond ((nth 3 state) font-lock-string-face)
        ((save-excursion (goto-char (nth 8 state)) (looking-at-p "///")) font-lock-doc-face)
        (t font-lock-comment-face)))

(defconst onnxtext-mode-syntax-table
  (let ((st (make-syntax-table)))
    (modify-syntax-entry ?# "<" st)
    (modify-syntax-entry ?/ ". 12" st)
    (modify-syntax-entry ?\n ">" st)
    (modify-syntax-entry ?\" "\"" st)
    (modify-syntax-entry ?\\ "\\" st)
    (modify-syntax-entry ?_ "_" st)
    (modify-syntax-entry ?< "(>" st)
    (modify-syntax-entry ?> ")<" st)
    (dolist (c '(?= ?, ?: ?. ?@ ?? ?-))
      (modify-syntax-entry c "." st))
    st)
  "Syntax table: # and // comments, double-quoted strings, <...> as brackets.")

(defun onnxtext--syntax-propertize (start end)
  "Make the `>' of `=>' punctuation between START and END.
So <...> stay balanced brackets."
  (goto-char start)
  (funcall (syntax-propertize-rules ("=\\(>\\)" (1 "."))) start end))

(defun onnxtext-indent-line ()
  "Indent the current line by its bracket depth.
Brackets in strings and comments do not count."
  (interactive)
  (let* ((depth (save-excursion (car (syntax-ppss (line-beginning-position)))))
         (closers (save-excursion
                    (back-to-indentation)
                    (let ((n 0))
                      (while (and (memq (char-after) '(?\) ?\] ?} ?>))
                                  (not (eq (char-before) ?=)))
                        (setq n (1+ n))
                        (forward-char 1)
                        (skip-chars-forward " \t"))
                      n)))
         (column (* onnxtext-indent-offset (max 0 (- depth closers))))
         (offset (- (current-column) (current-indentation))))
    (indent-line-to column)
    (when (> offset 0) (forward-char offset))))

;;;###autoload
(define-derived-mode onnxtext-mode prog-mode "ONNX-text"
  "Major mode for onnxtext, the textual form of ONNX models."
  :syntax-table onnxtext-mode-syntax-table
  (setq-local comment-start "# ")
  (setq-local comment-end "")
  (setq-local comment-start-skip "\\(?:#+\\|//+\\)[ \t]*")
  (setq-local syntax-propertize-function #'onnxtext--syntax-propertize)
  (setq-local indent-line-function #'onnxtext-indent-line)
  (setq-local indent-tabs-mode nil)
  (setq-local font-lock-defaults
              '(onnxtext-font-lock-keywords nil nil nil nil
                (font-lock-syntactic-face-function . onnxtext--syntactic-face))))

;;;###autoload
(add-to-list 'auto-mode-alist '("\\.onnxte?xt\\'" . onnxtext-mode))

(provide 'onnxtext-mode)
;;; onnxtext-mode.el ends here
