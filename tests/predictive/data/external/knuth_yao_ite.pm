// Knuth-Yao die written with ?: updates and init...endinit.
dtmc
module die
	s : [0..7];
	d : [0..6];
	[] s=0 -> 0.5 : (s'=1) + 0.5 : (s'=2);
	[] s=1 -> 0.5 : (s'=3) + 0.5 : (s'=4);
	[] s=2 -> 0.5 : (s'=5) + 0.5 : (s'=6);
	[] s>=3 & s<=6 -> 0.5 : (s'= s=3 ? 1 : 7) & (d'= s=3 ? 0 : 2*s-6)
	               + 0.5 : (s'= s=6 ? 2 : 7) & (d'= s=6 ? 0 : 2*s-5);
	[] s=7 -> true;
endmodule
init s=0 & d=0 endinit
label "six" = s=7 & d=6;
label "odd" = s=7 & mod(d, 2)=1;
rewards "flips" s<7 : 1; endrewards
