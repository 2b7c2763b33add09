# views strings (en). Keep the ids identical in en/ and tr/.
