BvariableJ@½iC;Cƒk(C\XºBHt7C­êCÕ–µBÈNC)›Cj,yC©èC×=C
ÉÒBi³¹Bö#hC€¬§B