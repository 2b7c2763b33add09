# views strings (tr). Keep the ids identical in en/ and tr/.
