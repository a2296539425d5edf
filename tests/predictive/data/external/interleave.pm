// Two independent modules with unlabelled commands: PRISM/Storm interleave them uniformly in a DTMC.
dtmc
module m1
	u : [0..4] init 0;
	[] u<4 -> 0.6 : (u'=u+1) + 0.4 : true;
	[] u=4 -> true;
endmodule
module m2
	v : [0..4] init 0;
	[] v<4 -> 0.3 : (v'=v+1) + 0.7 : (v'=max(0, v-1));
	[] v=4 -> true;
endmodule
label "u_first" = u=4 & v<4;
label "both" = u=4 & v=4;
